# ablation_bars.gp — what each gate intervention costs: the loss change ΔL
# (nats/token) overall and by token category, one cluster per intervention.
#
#   gnuplot -e "data='ablation.tsv'; out='ablation.png'" scripts/plots/ablation_bars.gp
#
# data: header row, then one row per intervention: its label as a reader says it
# ("α := 0 (every gate)", "full depth (p := 0)"), ΔL all
# tokens, then ΔL per token category (structural, functional, semantic; a
# category no intervention measured is left out).  ncol: the number of
# columns (default 5).  Optional: title.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (exists("title")) set title title noenhanced
set style data histograms
set ylabel 'ΔL (nats/token)'
set xtics rotate by -25 noenhanced font ',7'
set xzeroaxis lt -1 lw 0.8
set key top left
if (!exists("ncol")) ncol = 5
# no category column (a task without token categories): the all-token bars alone; an empty
# `for [c=3:2]` would still make gnuplot warn "no valid points", which fails the figure
if (ncol >= 3) {
    plot data using 2:xtic(1) title columnheader(2) lt 4, for [c=3:ncol] '' using c title columnheader(c) lt (c-2)
} else {
    plot data using 2:xtic(1) title columnheader(2) lt 4
}
