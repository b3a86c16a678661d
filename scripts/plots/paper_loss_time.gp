# paper_loss_time.gp — validation loss (the training-time evaluation windows)
# of SATFormer, the plain model and the dense cross-layer variants (claim 14),
# per variant the mean over seeds as a line and ± one sd as a band: against
# training tokens, and (timed=1) against time, each checkpoint's step times
# the variant's step time measured by the bench stage on an idle machine
# (never the shared-machine clock of the training runs).
#
#   gnuplot -e "data='paper_loss_time.tsv'; out='x.png'; timed=1" scripts/plots/paper_loss_time.gp
#
# data: blocks separated by two blank lines, each with a header row whose
# first cell is the curve's title; rows: step, tokens, loss (nats/token,
# mean), sd (0 with one seed), seeds, bench seconds ("nan": not benched).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("timed")) timed = 0
load style
set ylabel 'validation loss (nats/token)'
set key top right
set style fill transparent solid 0.18 noborder
if (!exists("title")) title = ''
if (timed) { set multiplot layout 1,2 title title noenhanced } else { set title title noenhanced }
set xlabel 'training tokens'
plot for [i=0:*] data index i using 2:($3-$4):($3+$4) with filledcurves lt (i+1) notitle, \
     for [i=0:*] data index i using 2:3 with lines lt (i+1) title columnheader(1)
if (timed) {
    set xlabel 'seconds at the bench step time (scale s, idle machine)'
    plot for [i=0:*] data index i using 6:($3-$4):($3+$4) with filledcurves lt (i+1) notitle, \
         for [i=0:*] data index i using 6:3 with lines lt (i+1) title columnheader(1)
    unset multiplot
}
