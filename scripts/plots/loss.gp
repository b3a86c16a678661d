# loss.gp — training and validation loss against the optimiser step or the
# wall-clock time: one colour per group of runs that differ only by seed,
# the mean over seeds as a line (train solid, validation dashed) and, with
# several seeds, a band of ± one standard deviation.
#
#   gnuplot -e "data='loss.tsv'; out='loss_step.png'; x='step'" scripts/plots/loss.gp
#
# data: blocks separated by two blank lines, in pairs per group (train, then
# val); each block starts with a header row whose first cell is the group's
# legend text; then rows: step, wall_s (seconds since each run's first
# metric, mean over seeds), mean loss (nats/token), sd over seeds (0 with one
# seed), seeds.  x = 'step' (default) or 'time'.  Optional: title, band = 0
# to leave the bands out.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("x")) x = 'step'
if (!exists("band")) band = 1
if (!exists("fig_w")) fig_w = 6.5
load style
if (exists("title")) set title title noenhanced
set xlabel (x eq 'time' ? 'wall-clock time (s)' : 'optimiser step')
set ylabel 'loss (nats/token)'
set key outside right top
_xc = (x eq 'time') ? 2 : 1
set style fill transparent solid 0.18 noborder
if (band) {
plot for [i=0:*:2] data index i using _xc:($3-$4):($3+$4) with filledcurves lt (i/2+1) notitle, \
     for [i=1:*:2] data index i using _xc:($3-$4):($3+$4) with filledcurves lt ((i-1)/2+1) notitle, \
     for [i=0:*:2] data index i using _xc:3 with lines lt (i/2+1) title columnheader(1), \
     for [i=1:*:2] data index i using _xc:3 with lines lt ((i-1)/2+1) dt 2 notitle, \
     NaN with lines lc rgb '#555555' title 'train (solid)', NaN with lines lc rgb '#555555' dt 2 title 'validation (dashed)'
} else {
plot for [i=0:*:2] data index i using _xc:3 with lines lt (i/2+1) title columnheader(1), \
     for [i=1:*:2] data index i using _xc:3 with lines lt ((i-1)/2+1) dt 2 notitle, \
     NaN with lines lc rgb '#555555' title 'train (solid)', NaN with lines lc rgb '#555555' dt 2 title 'validation (dashed)'
}
