# loss.gp — training and validation loss of several runs, against the
# optimiser step or the wall-clock time.
#
#   gnuplot -e "data='loss.tsv'; out='loss_step.png'; x='step'" scripts/plots/loss.gp
#
# data: blocks separated by two blank lines, in pairs per run (train, then
# val); each block starts with a header row whose first cell is the curve's
# title; then rows: step, wall_s (seconds since the run's first metric),
# loss (nats/token).  x = 'step' (default) or 'time'.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("x")) x = 'step'
load style
set xlabel (x eq 'time' ? 'wall-clock time (s)' : 'optimiser step')
set ylabel 'loss (nats/token)'
_xc = (x eq 'time') ? 2 : 1
plot for [i=0:*:2] data index i using _xc:3 with lines lt (i/2+1) title columnheader(1), \
     for [i=1:*:2] data index i using _xc:3 with linespoints lt ((i-1)/2+1) dt 2 title columnheader(1)
