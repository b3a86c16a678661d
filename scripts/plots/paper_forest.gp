# paper_forest.gp — the forest plot of the paper report: one line per judged
# row (analysis/paper.c writes figures/paper_forest.tsv), its deciding
# quantity shifted by the row's threshold (0 = the threshold; each row in its
# own units, named in its label) with its interval as a horizontal bar, and the
# paper's value on the same shift as a cross.
#
#   gnuplot -e "data='paper_forest.tsv'; out='x.png'" scripts/plots/paper_forest.gp
#
# data: header row, then index, row label, mean, lo, hi, paper, verdict ("nan": none).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (exists("title")) set title title noenhanced
set xlabel 'deciding quantity − threshold (row units)'
set ytics noenhanced font ',7'
set yrange [-1:*] reverse
set xzeroaxis
set arrow from 0, graph 0 to 0, graph 1 nohead lc rgb '#444444' dt 2
set key bottom right
set offsets 0, 0, 0.5, 0.5
plot data using 3:1:4:5:ytic(2) with xerrorbars lt 1 pt 7 title 'ours (95 % interval)', \
     data using 6:1 with points lt 2 pt 2 ps 1.2 title 'paper'
