# paper_bars.gp — one bar per row with its spread over seeds: the gate
# ablations (ΔL, nats/token) or any mean ± sd per label.
#
#   gnuplot -e "data='paper_ablation.tsv'; out='x.png'; ylab='ΔL (nats/token)'" scripts/plots/paper_bars.gp
#
# data: header row, then label, mean, sd (sd "nan" with one seed).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("ylab")) ylab = 'value'
load style
if (exists("title")) set title title noenhanced
set ylabel ylab
set key autotitle columnheader
set boxwidth 0.6
set xtics noenhanced rotate by -20 left
set key off
set xzeroaxis lt -1
set offsets 0.6, 0.6, 0, 0
stats data using 2 nooutput
if (STATS_max - STATS_min < 1e-12) { set yrange [STATS_min - 0.01 : STATS_max + 0.01] }
plot data using 0:2:xtic(1) with boxes lt 1 notitle, \
     data using 0:2:($3 == $3 ? $3 : 0) with yerrorbars lt -1 lw 1 pt 0 notitle
