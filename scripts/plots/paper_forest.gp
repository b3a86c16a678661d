# paper_forest.gp — the forest plot of the paper report: one line per judged
# row (analysis/paper/paper.c writes figures/paper_forest.tsv), its deciding
# quantity shifted by the row's threshold (0 = the threshold) with its
# interval as a horizontal bar, and the paper's value on the same shift as a
# cross (a row without an interval, one measurement, is its point alone); one panel per unit (%, pp, nats, ratio, unitless), each with its own
# axis, so a row in nats is never a dot on an axis scaled for per cent.
#
#   gnuplot -e "data='paper_forest.tsv'; out='x.png'; npanels=2; units='% nats'; counts='3 4'; papers='1 0'; nrows=7" \
#       scripts/plots/paper_forest.gp
#
# data: header row, then index, row label, mean, lo, hi, paper, verdict, panel (1 …), pindex (the line
# within its panel), unit ("nan": none), the lines of a panel contiguous.  papers: per panel, 1 when
# a line of it has the paper's value (a plot of no valid point is an error).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
if (!exists("npanels")) { npanels = 1; units = 'all'; counts = '1' }
if (!exists("nrows")) { nrows = word(counts, 1) + 0 }
set multiplot title (exists("title") ? title : '') noenhanced
set ytics noenhanced font ',7'
set xzeroaxis
set key horizontal right top at screen 0.98, screen 0.968 font ',7'
set offsets 0, 0, 0.5, 0.5
# panel heights proportional to their rows, plus a fixed share for each panel's axis and title
_top = 0.97
_fixed = 0.55
_unit = (_top - 0.02) / (nrows * 0.22 + npanels * _fixed)
_y = _top
_s = 0
do for [k=1:npanels] {
    _n = word(counts, k) + 0
    _e = _s + _n - 1
    _h = (_n * 0.22 + _fixed) * _unit
    _y = _y - _h
    set origin 0, _y
    set size 1, _h
    set title sprintf('%s', word(units, k)) noenhanced font ',9' offset 0, -0.6
    set xlabel sprintf('deciding quantity − threshold (%s)', word(units, k)) noenhanced font ',8' offset 0, 0.5
    set yrange [-1:_n] reverse
    set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#444444' dt 2
    # the panel's lines are contiguous in the file (paper.c writes them by panel): rows _s … _e after the header
    if (k > 1) { unset key }  # one key, at the top of the figure
    if (exists("papers") && word(papers, k) eq '1') {
        plot data skip 1 every ::_s::_e using 3:9:4:5:ytic(2) with xerrorbars lt 1 pt 7 title 'ours (interval)', \
             data skip 1 every ::_s::_e using 3:9 with points lt 1 pt 7 notitle, \
             data skip 1 every ::_s::_e using 6:9 with points lt 2 pt 2 ps 1.2 title 'paper'
    } else {
        plot data skip 1 every ::_s::_e using 3:9:4:5:ytic(2) with xerrorbars lt 1 pt 7 title 'ours (interval)', \
             data skip 1 every ::_s::_e using 3:9 with points lt 1 pt 7 notitle
    }
    _s = _e + 1
}
unset multiplot
