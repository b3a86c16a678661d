# gate_bands.gp — one gate's distribution over training: per block (or router),
# the 5–95 % and 25–75 % quantile bands and the median of the gate over the
# trace's probe tokens (and KV heads) at every evaluation step.
#
#   gnuplot -e "data='gate_bands_alpha.tsv'; out='bands.png'; ylabel='α'" scripts/plots/gate_bands.gp
#
# data: blocks separated by two blank lines, one per block or router; each
# starts with a header row whose first cell is its legend ("block 1"); then
# rows: step q05 q25 q50 q75 q95 mean.  Optional: title, ylabel.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("ylabel")) ylabel = 'gate value'
if (!exists("fig_w")) fig_w = 6.5
load style
if (exists("title")) set title title noenhanced
set xlabel 'optimiser step'
set ylabel ylabel noenhanced
set key outside right top
set style fill transparent solid 0.15 noborder
plot for [i=0:*] data index i using 1:2:6 with filledcurves lt (i+1) notitle, \
     for [i=0:*] data index i using 1:3:5 with filledcurves lt (i+1) fs transparent solid 0.3 notitle, \
     for [i=0:*] data index i using 1:4 with lines lt (i+1) title columnheader(1), \
     NaN with lines lc rgb '#555555' title 'median; bands 25–75 %, 5–95 %'
