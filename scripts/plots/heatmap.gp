# heatmap.gp — a block × KV-head map of one number per gate: the mean
# SATFormer gate α (from `gatelab analyze`) or the loss increase ΔL when that
# gate alone is zeroed (from `gatelab heads`).  Each cell is printed too.
#
#   gnuplot -e "data='alpha_heatmap.tsv'; out='alpha.png'; cblabel='mean α'" scripts/plots/heatmap.gp
#
# data: header row, then columns layer, kv_head, value ("nan": no value;
# drawn blank; `gatelab figures` leaves out blocks without a gate).
# Optional: title (plot title), cblabel (colour-bar label), diverging=1 for a
# signed value (ΔL): a blue-white-red map with white at zero, on a range
# symmetric about zero (cbmin = −cbmax; computed here when not given).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("cblabel")) cblabel = 'value'
load style
if (exists("title")) set title title noenhanced
unset grid
set xlabel (exists("xlab") ? xlab : 'KV head')
set ylabel 'block'
set cblabel cblabel
set xtics 1 out
set ytics 1 out
set tics nomirror
# the blocks and heads that hold a value (a block without a gate, all "nan", is left out of the
# axes); one column at a time: a 1 x 1 grid (one gated block, one KV head) has no 2-D statistics
stats data using ($3 == $3 ? $1 : NaN) name 'BL' nooutput
stats data using ($3 == $3 ? $2 : NaN) name 'KV' nooutput
if (!exists("diverging")) diverging = 0
if (exists("cbmin")) { _lo = cbmin; _hi = cbmax } else { stats data using 3 nooutput; _lo = STATS_min; _hi = STATS_max }
set xrange [KV_min - 0.5 : KV_max + 0.5]
set yrange [BL_min - 0.5 : BL_max + 0.5]
# a signed value without a given range: symmetric about zero, so white means "no change"
if (diverging && !exists("cbmin")) { _a = (abs(_lo) > abs(_hi) ? abs(_lo) : abs(_hi)); _a = (_a > 0 ? 1.02 * _a : 1e-6); _lo = -_a; _hi = _a; set cbrange [_lo:_hi] }
_mid = (_lo + _hi) / 2.0
if (diverging) { set palette defined (0 '#2166ac', 0.25 '#92c5de', 0.5 '#f7f7f7', 0.75 '#f4a582', 1 '#b2182b') }
# labels: viridis: black on the light (upper) half, white on the dark half;
# diverging: white on the saturated ends, black near zero
_dark(v) = diverging ? (abs(v - _mid) > 0.35 * (_hi - _lo)) : (v <= _mid)
set style fill solid 1.0 noborder
# cells as boxes, not `with image`: a model with one gated block is a 1 x H grid, which image refuses
plot data using 2:1:(0.5):(0.5):3 with boxxyerror fc palette notitle, \
     data using 2:1:(sprintf('%.3g', $3)):(_dark($3) ? 0xffffff : 0x000000) with labels font ',7' tc rgb variable notitle
