# pareto.gp — the compute/quality trade-off of token-selective depth: TLOps
# saved against validation loss, one curve per (data, scale, variant) over the
# depth penalty λ, with early exit on the same axes when early-exit data
# exist (its point at the τ matched to TSA's α, and its curve over τ).
# Every point is the mean over seeds with ± sd error bars on both axes.
#
#   gnuplot -e "data='pareto_tsa.tsv'; out='pareto.png'" scripts/plots/pareto.gp
#   gnuplot -e "data='pareto_tsa.tsv'; exitdata='pareto_exit.tsv'; out='pareto.pdf'" scripts/plots/pareto.gp
#
# data / exitdata: blocks separated by two blank lines, each starting with a
# header row whose first cell is the curve's legend text; then rows: knob (λ
# or τ), TLOps saved (% of the full model's layer FLOPs) mean, sd, val loss
# (nats/token) mean, sd, point label ("." for none: a τ sweep labels its two
# ends only, so labels never pile up).  The legend sits outside the plot.
# title (optional): what the numbers were measured on.
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
if (!exists("fig_w")) fig_w = 7.5
load style
set xlabel 'TLOps saved (%)'
set ylabel 'validation loss (nats/token)'
set key outside right top
if (exists("title")) { set title title noenhanced }
if (!exists("xmin")) { set offsets graph 0.05, graph 0.08, graph 0.08, graph 0.08 }
_lab(c) = (strcol(c) eq '.' ? '' : strcol(c))
if (exists("exitdata")) {
    plot for [i=0:*] data index i using 2:4 with lines lt (i+1) notitle, \
         for [i=0:*] data index i using 2:4:3:5 with xyerrorbars lt (i+1) pt 7 title columnheader(1), \
         for [i=0:*] data index i using 2:4:(_lab(6)) with labels offset 0.9,0.7 font ',6' notitle, \
         for [i=0:*] exitdata index i using 2:4 with lines lt (i+5) dt 2 notitle, \
         for [i=0:*] exitdata index i using 2:4:3:5 with xyerrorbars lt (i+5) pt 6 title columnheader(1), \
         for [i=0:*] exitdata index i using 2:4:(_lab(6)) with labels offset -0.9,-0.8 font ',6' notitle
} else {
    plot for [i=0:*] data index i using 2:4 with lines lt (i+1) notitle, \
         for [i=0:*] data index i using 2:4:3:5 with xyerrorbars lt (i+1) pt 7 title columnheader(1), \
         for [i=0:*] data index i using 2:4:(_lab(6)) with labels offset 0.9,0.7 font ',6' notitle
}
