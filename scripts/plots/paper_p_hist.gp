# paper_p_hist.gp — TSA's halting probabilities p on copy and sort (claims 1–2): the share of
# (router, probe token) pairs per bin of p, mean ± sd over seeds, one series per (task, λ).
#
#   gnuplot -e "data='paper_p_hist.tsv'; out='x.png'; nser=2; binw=0.1" scripts/plots/paper_p_hist.gp
#
# data: header row, then the bin's centre and, per series, mean and sd (sd "nan" with one seed).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("nser")) nser = 1
if (!exists("binw")) binw = 0.1
load style
if (exists("title")) set title title noenhanced
set xlabel 'halting probability p (a token skips the next block when p > 0.5)'
set ylabel 'share of (router, token) pairs'
set key autotitle columnheader noenhanced top center
set xrange [0:1]
set yrange [0:*]
set xtics 0.1
set arrow from 0.5, graph 0 to 0.5, graph 1 nohead lt 0
w = 0.9 * binw / nser
set boxwidth w
set style fill solid 0.6 border -1
plot for [k=1:nser] data using ($1 - 0.45 * binw + (k - 0.5) * w):(column(2 * k)) with boxes lt k title columnheader(2 * k), \
     for [k=1:nser] data using ($1 - 0.45 * binw + (k - 0.5) * w):(column(2 * k)):(column(2 * k + 1) == column(2 * k + 1) ? column(2 * k + 1) : 0) \
         with yerrorbars lt -1 lw 1 pt 0 notitle
