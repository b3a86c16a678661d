# depth_map.gp — which characters halt early: a text sample laid out in rows,
# each character on a cell coloured by its effective depth under TSA (soft
# depth 1 + Σ(1 − p), in blocks; dark = shallow).
#
#   gnuplot -e "data='depth_map.tsv'; out='map.png'; maxdepth=4; fig_w=9; fig_h=4" scripts/plots/depth_map.gp
#
# data: header row, then one row per character: col, row, depth, char (as
# written by `gatelab figures`: ␣ space, ↵ newline, ∖ backslash, ” double quote).
# maxdepth (blocks) fixes the colour range [1, maxdepth].  Optional: title.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
set termoption noenhanced
if (exists("title")) set title title noenhanced
unset grid
unset border
unset xtics
unset ytics
set yrange [*:*] reverse
set cbrange [1:maxdepth]
set cblabel 'effective depth (blocks)'
set offsets 0.5, 0.5, 0.5, 0.5
set style fill solid 1.0 noborder
plot data using 1:2:(0.5):(0.5):3 with boxxyerror fc palette notitle, \
     data using 1:2:4:($3 > (1 + maxdepth) / 2.0 ? 0x000000 : 0xffffff) with labels font 'DejaVu Sans Mono,7' tc rgb variable notitle
