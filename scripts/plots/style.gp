# style.gp — the one look shared by every gatelab figure (scripts/plots/*.gp).
#
# Loaded by each script after it sets its variables.  Inputs (gnuplot -e):
#   out    output file; a name ending in .pdf gets the pdfcairo terminal,
#          .svg the svg terminal (for the HTML report), anything else
#          pngcairo (PNG at 200 pixels per inch)
#   fig_w, fig_h   figure size in inches (optional; default 5.5 x 3.4)
#   xmin, xmax, ymin, ymax, cbmin, cbmax   axis ranges (optional; autoscaled
#          otherwise).  `gatelab figures` always passes them, so a figure with
#          a single point or a constant value still has a proper range instead
#          of gnuplot's "empty range" warning.
# Data files are tab-separated with a header row ("nan" marks a missing value).
# Text is plain (noenhanced terminals): a label such as 'early_exit' or 'x^2'
# prints as written, never as a subscript or superscript; no script turns
# enhanced text back on (tests/integration/figures.sh checks both).
# Colours: the Tableau 10 cycle and 6 darker hues (16 in all) for lines and bars; viridis for heatmaps, a
# blue-white-red map centred on zero for signed values (diverging=1).

if (!exists("out")) { print "style.gp: set out='FILE.png' or out='FILE.pdf' with gnuplot -e"; exit status 2 }
if (!exists("fig_w")) fig_w = 5.5
if (!exists("fig_h")) fig_h = 3.4
_ext = strlen(out) >= 4 ? out[strlen(out)-3:strlen(out)] : ''
if (_ext eq '.pdf') {
    set terminal pdfcairo noenhanced color font 'DejaVu Sans,8' size fig_w*1.0 in, fig_h*1.0 in linewidth 1.2
} else { if (_ext eq '.svg') {
    set terminal svg noenhanced font 'DejaVu Sans,9' size int(fig_w*110), int(fig_h*110) linewidth 1.2 background '#ffffff'
} else {
    set terminal pngcairo noenhanced color font 'DejaVu Sans,9' size int(fig_w*200), int(fig_h*200) linewidth 1.6 fontscale 1.6
} }
set output out

set datafile separator "\t"
set datafile missing "nan"
# UTF-8 labels (α, λ, ±): the cairo and svg terminals write the same bytes with `set encoding
# utf8` or without it, but under a locale that is not UTF-8 (none set: C, as on a fresh install
# or in a container) the setting makes gnuplot warn "iconv failed to convert degree sign", and a
# warning fails a figure; so it is set only where the locale's character map is UTF-8
if (system('locale charmap 2>/dev/null') eq 'UTF-8') { set encoding utf8 }
set border 3 lw 1 lc rgb '#444444'
set tics nomirror out scale 0.6
set grid lc rgb '#d0d0d0' lw 0.8 dt 3
set key top right noopaque samplen 2.5 spacing 1.1 font ',7'
set linetype 1 lc rgb '#4e79a7' lw 1.6 pt 7 ps 0.5
set linetype 2 lc rgb '#f28e2b' lw 1.6 pt 5 ps 0.5
set linetype 3 lc rgb '#59a14f' lw 1.6 pt 9 ps 0.6
set linetype 4 lc rgb '#e15759' lw 1.6 pt 11 ps 0.6
set linetype 5 lc rgb '#76b7b2' lw 1.6 pt 13 ps 0.6
set linetype 6 lc rgb '#edc948' lw 1.6 pt 7 ps 0.5
set linetype 7 lc rgb '#b07aa1' lw 1.6 pt 5 ps 0.5
set linetype 8 lc rgb '#ff9da7' lw 1.6 pt 9 ps 0.6
set linetype 9 lc rgb '#9c755f' lw 1.6 pt 11 ps 0.6
set linetype 10 lc rgb '#bab0ac' lw 1.6 pt 13 ps 0.6
# 11-16: darker, distinct hues after the Tableau 10, so a figure of up to 16 groups (the
# built-in demo draws 11 loss curves) never gives two groups one colour
set linetype 11 lc rgb '#1f2f6b' lw 1.6 pt 7 ps 0.5
set linetype 12 lc rgb '#a6761d' lw 1.6 pt 5 ps 0.5
set linetype 13 lc rgb '#1b7837' lw 1.6 pt 9 ps 0.6
set linetype 14 lc rgb '#8e0152' lw 1.6 pt 11 ps 0.6
set linetype 15 lc rgb '#17becf' lw 1.6 pt 13 ps 0.6
set linetype 16 lc rgb '#000000' lw 1.6 pt 7 ps 0.5
set linetype cycle 16
set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')
set style fill solid 0.85 border -1
set style histogram clustered gap 1
if (exists("xmin") && exists("xmax")) { set xrange [xmin:xmax] }
if (exists("ymin") && exists("ymax")) { set yrange [ymin:ymax] }
if (exists("cbmin") && exists("cbmax")) { set cbrange [cbmin:cbmax] }
