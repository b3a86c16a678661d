# paper_loss_time.gp — training loss against wall-clock time for SATFormer,
# the plain model and the dense cross-layer variants (claim 14): per variant
# the mean over seeds as a line and ± one sd as a band.
#
#   gnuplot -e "data='paper_loss_time.tsv'; out='x.png'" scripts/plots/paper_loss_time.gp
#
# data: blocks separated by two blank lines, each with a header row whose
# first cell is the curve's title; rows: seconds since the runs' first step
# (mean over seeds), training loss (nats/token, mean), sd (0 with one seed),
# seeds.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (exists("title")) set title title noenhanced
set xlabel 'wall-clock time (s)'
set ylabel 'training loss (nats/token)'
set key top right
set style fill transparent solid 0.18 noborder
plot for [i=0:*] data index i using 1:($2-$3):($2+$3) with filledcurves lt (i+1) notitle, \
     for [i=0:*] data index i using 1:2 with lines lt (i+1) title columnheader(1)
