# paper_pareto.gp — TSA's λ trade-off against early exit, over seeds: TLOps
# saved (%) against whole-split validation loss, mean ± sd over seeds on both
# axes; the dense model at 0 % and early exit at the τ matched to TSA's α.
#
#   gnuplot -e "data='paper_pareto.tsv'; out='paper_pareto.png'" scripts/plots/paper_pareto.gp
#
# data: blocks separated by two blank lines, each with a header row whose
# first cell is the curve's title; rows: point label ("λ=…"; "τ=…" for early exit; blank for
# the dense model), saved mean, saved sd, loss mean, loss sd.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (exists("title")) set title title noenhanced
set xlabel 'TLOps saved (%)'
set ylabel 'validation loss, whole split (nats/token)'
set key top left
set offsets graph 0.05, graph 0.1, graph 0.1, graph 0.1
# a constant axis (nothing skipped yet, or one loss) gets a range around it, not gnuplot's warning
stats data using 2 nooutput
if (STATS_max - STATS_min < 1e-9) { set xrange [STATS_min - 1 : STATS_max + 1] }
stats data using 4 nooutput
if (STATS_max - STATS_min < 1e-9) { set yrange [STATS_min - 0.01 : STATS_max + 0.01] }
plot for [i=0:*] data index i using 2:4:3:5 with xyerrorlines lt (i+1) pt 7 title columnheader(1), \
     for [i=0:*] data index i using 2:4:(stringcolumn(1) eq '' ? '' : sprintf('%s', stringcolumn(1))) with labels offset 1.2,0.7 font ',6' notitle
