# heatmap.gp — a block × KV-head map of one number per gate: the mean
# SATFormer gate α (from `gatelab analyze`) or the loss increase ΔL when that
# gate alone is zeroed (from `gatelab heads`).  Each cell is printed too.
#
#   gnuplot -e "data='alpha_heatmap.tsv'; out='alpha.png'; cblabel='mean α'" scripts/plots/heatmap.gp
#
# data: header row, then columns layer, kv_head, value ("nan": the block has
# no gate; drawn blank).  Optional: title (plot title), cblabel (colour-bar label).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("cblabel")) cblabel = 'value'
load style
if (exists("title")) set title title noenhanced
unset grid
set xlabel 'KV head'
set ylabel 'block'
set cblabel cblabel
set xtics 1 out
set ytics 1 out
set tics nomirror
stats data using 1:2 nooutput
set xrange [STATS_min_y - 0.5 : STATS_max_y + 0.5]
set yrange [STATS_min_x - 0.5 : STATS_max_x + 0.5]
if (exists("cbmin")) { _mid = (cbmin + cbmax) / 2.0 } else { stats data using 3 nooutput; _mid = (STATS_min + STATS_max) / 2.0 }
# labels: black on the light (upper) half of the palette, white on the dark half
plot data using 2:1:3 with image notitle, \
     data using 2:1:(sprintf('%.3g', $3)):($3 > _mid ? 0x000000 : 0xffffff) with labels font ',7' tc rgb variable notitle
