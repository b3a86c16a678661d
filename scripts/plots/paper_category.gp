# paper_category.gp — SATFormer's mean gate α per block on semantic,
# structural and functional tokens, mean ± sd over seeds (claim 11).
#
#   gnuplot -e "data='paper_category.tsv'; out='x.png'" scripts/plots/paper_category.gp
#
# data: header row, then block, and mean, sd for semantic, structural, functional.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (exists("title")) set title title noenhanced
set xlabel 'block'
set ylabel 'mean α'
set key autotitle columnheader
set key top right
set boxwidth 0.26
set xtics 1
stats data using 1 nooutput
set xrange [STATS_min - 0.6 : STATS_max + 0.6]
set yrange [0:*]
plot data using ($1 - 0.28):2 with boxes lt 1 title 'semantic', \
     data using ($1 - 0.28):2:($3 == $3 ? $3 : 0) with yerrorbars lt -1 lw 1 pt 0 notitle, \
     data using ($1):4 with boxes lt 2 title 'structural', \
     data using ($1):4:($5 == $5 ? $5 : 0) with yerrorbars lt -1 lw 1 pt 0 notitle, \
     data using ($1 + 0.28):6 with boxes lt 3 title 'functional', \
     data using ($1 + 0.28):6:($7 == $7 ? $7 : 0) with yerrorbars lt -1 lw 1 pt 0 notitle
