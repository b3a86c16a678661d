# category_bars.gp — a gate's mean by token category (structural, functional,
# semantic) for each block: clustered bars, one cluster per block.
#
#   gnuplot -e "data='category_alpha.tsv'; out='cat.png'; ylab='mean α'" scripts/plots/category_bars.gp
#
# data: header row (the first cell names the x axis, the others the
# categories), then one row per block: label, then one column per category
# (structural, functional, semantic — a category without tokens is left out).
# ncol: the number of columns (default 4).  Optional: ylab, title.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("ylab")) ylab = 'mean'
load style
if (exists("title")) set title title noenhanced
set style data histograms
set ylabel ylab
set xlabel 'block'
if (!exists("ymin")) { set yrange [0:*] }
set key top left
if (!exists("ncol")) ncol = 4
# one category only: no empty `for [c=3:2]` (gnuplot warns "no valid points" on it)
if (ncol >= 3) {
    plot data using 2:xtic(1) title columnheader(2) lt 1, for [c=3:ncol] '' using c title columnheader(c) lt (c-1)
} else {
    plot data using 2:xtic(1) title columnheader(2) lt 1
}
