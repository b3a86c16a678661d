# pareto.gp — the compute/quality trade-off of token-selective depth: TLOps
# saved against validation loss, one curve per (data, scale, variant) over the
# depth penalty λ, with the early-exit curve over the threshold τ on the same
# axes when early-exit data exist.
#
#   gnuplot -e "data='pareto_tsa.tsv'; out='pareto.png'" scripts/plots/pareto.gp
#   gnuplot -e "data='pareto_tsa.tsv'; exitdata='pareto_exit.tsv'; out='pareto.pdf'" scripts/plots/pareto.gp
#
# data / exitdata: blocks separated by two blank lines, each starting with a
# header row whose first cell is the curve's title; then rows: knob (λ or
# τ), tlops_saved (% of the full model's layer FLOPs), val_loss (nats/token).
# Points are labelled with their knob value.  title (optional): what the
# numbers were measured on (every point of the figure on one token set).
if (!exists("style")) { _d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne '/') { _i = _i - 1 }; style = _d[1:_i] . 'style.gp' }
load style
set xlabel 'TLOps saved (%)'
set ylabel 'validation loss (nats/token)'
set key top left
if (exists("title")) { set title title noenhanced }
if (!exists("xmin")) { set offsets graph 0.05, graph 0.08, graph 0.08, graph 0.08 }
if (exists("exitdata")) {
    plot for [i=0:*] data index i using 2:3 with linespoints lt (i+1) pt 7 title columnheader(1), \
         for [i=0:*] data index i using 2:3:(sprintf('λ=%g', $1)) with labels offset 0.8,0.6 font ',6' notitle, \
         for [i=0:*] exitdata index i using 2:3 with linespoints lt (i+5) dt 2 pt 6 title columnheader(1), \
         for [i=0:*] exitdata index i using 2:3:(sprintf('τ=%g', $1)) with labels offset 0.8,-0.6 font ',6' notitle
} else {
    plot for [i=0:*] data index i using 2:3 with linespoints lt (i+1) pt 7 title columnheader(1), \
         for [i=0:*] data index i using 2:3:(sprintf('λ=%g', $1)) with labels offset 0.8,0.6 font ',6' notitle
}
