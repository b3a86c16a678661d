# depth_profile.gp — one number per block for several runs: the mean SATFormer
# gate α by block, or for TSA the mean halting probability p of the router
# feeding each block and the share of tokens that run it.
#
#   gnuplot -e "data='depth_alpha.tsv'; out='depth_alpha.png'; ylab='mean α'" scripts/plots/depth_profile.gp
#
# data: blocks separated by two blank lines, each starting with a header row
# whose first cell is the curve's title; then rows: layer (block), value.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("ylab")) ylab = 'value'
load style
set xlabel 'block'
set ylabel ylab
set xtics 1
if (!exists("ymin")) { set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05 }
plot for [i=0:*] data index i using 1:2 with linespoints lt (i+1) title columnheader(1)
