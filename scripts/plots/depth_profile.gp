# depth_profile.gp — one number per block for several groups of runs: the
# mean SATFormer gate α by block, or for TSA the mean halting probability p
# of the router feeding each block; the mean over a group's seeds with ± sd
# error bars (none with one seed).
#
#   gnuplot -e "data='depth_alpha.tsv'; out='depth_alpha.png'; ylab='mean α'" scripts/plots/depth_profile.gp
#
# data: blocks separated by two blank lines, each starting with a header row
# whose first cell is the curve's legend text; then rows: block, mean, sd
# over seeds (0 with one), seeds.  Optional: ylab, title.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("ylab")) ylab = 'value'
if (!exists("fig_w")) fig_w = 6.5
load style
if (exists("title")) set title title noenhanced
set xlabel 'block'
set ylabel ylab
set xtics 1
set key outside right top
if (!exists("ymin")) { set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05 }
# one block only (a 2-block TSA model has one router): a range around it, not gnuplot's warning
if (!exists("xmin")) { stats data using 1 nooutput; if (STATS_max == STATS_min) { set xrange [STATS_min - 1 : STATS_max + 1] } }
plot for [i=0:*] data index i using 1:2:3 with yerrorlines lt (i+1) title columnheader(1)
