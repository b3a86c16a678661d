#!/usr/bin/env bash
# resample.sh — `gatelab ablate --mode resample` (TransformerLens's resample
# ablation: each evaluation token's gates replaced by those of one token drawn
# from the reference windows) on tiny runs trained here: it changes the loss
# differently from mean ablation, repeats bit for bit (and, to float32 rounding, with another batch
# size: the draw depends only on the seed and the token's position), leaves a
# gate that is already constant (the static head gate) exactly as it was
# (ΔL = 0), is logged and tabled beside zero and mean, and refuses ResFormer's
# per-block constants with a reason.
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
export OMP_NUM_THREADS=1
R="$W/results"
q() { sqlite3 "$R/gatelab.db" "$1"; }
T() { "$BIN" train "$TINY" model.n_layer=3 model.n_kv_head=2 train.steps=40 train.ckpt_every=40 "$@" --results "$R" --quiet \
          > "$W/train.log" 2>&1; }
ok=1
T model.value_residual=satformer --run-id sat || ok=0
T model.value_residual=headgate --run-id hg || ok=0
T model.value_residual=resformer --run-id rf || ok=0
check "train tiny SATFormer, static head gate and ResFormer runs" test $ok = 1
[ $ok = 1 ] || { tail -20 "$W/train.log"; exit 1; }
js() { tail -1 "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"; } # a number of the JSON line

A() { "$BIN" ablate "$@" --results "$R" --windows 8 > "$W/out" 2>&1; }
A sat --mode resample --no-db; rc=$?; cp "$W/out" "$W/rs1"
check "ablate --mode resample exits 0 and names its reference windows" \
    eval '[ $rc = 0 ] && grep -q "\"mode\":\"resample\".*\"reference\":\"val\[8,16)\"" "$W/rs1"'
A sat --mode resample --no-db; cp "$W/out" "$W/rs2"
A sat --mode resample --batch 3 --no-db; cp "$W/out" "$W/rs3"
d1=$(js "$W/rs1" delta_loss); l1=$(js "$W/rs1" loss); l2=$(js "$W/rs2" loss); l3=$(js "$W/rs3" loss)
check "resample repeats exactly with the same seed (loss $l1 = $l2)" test -n "$l1" -a "$l1" = "$l2"
# Not bit for bit across batch sizes: sgemm's kernel (OPENBLAS_CORETYPE) may block its sums
# differently for 16 and 3 windows a batch, which moves each logit by about one float32
# rounding; under OPENBLAS_CORETYPE=Haswell the mean loss moved by 1.6e-8 here.  A draw that
# depended on the batch would take other donor tokens and move the loss by about |ΔL| (1.6e-5
# on this tiny model), so the tolerance is |ΔL| / 100: ten times the rounding seen, a hundred
# times below what a batch-dependent draw would do.
check "resample does not depend on the batch size (loss $l1 with 16, $l3 with 3 windows a batch; tolerance |ΔL|/100, ΔL $d1)" \
    awk -v a="$l1" -v b="$l3" -v d="$d1" 'BEGIN { e = a - b; if (e < 0) e = -e; if (d < 0) d = -d
        exit !(a != "" && b != "" && d > 0 && e <= d / 100) }'
# full precision from the registry: a tiny model's ΔL is small
A sat --mode resample; A sat --mode mean
# the registry keeps the gates as data: resample.all.loss is name resample.loss, params {"gates":"all"}
v() { q "select printf('%.17g', value) from metrics where run_id = 'sat' and split = 'ablation' and name = '$1' and params = '{\"gates\":\"all\"}'"; }
rs=$(v resample.loss); mn=$(v mean.loss); drs=$(v resample.delta_loss)
check "resample differs from mean ablation (loss $rs vs $mn)" test -n "$rs" -a -n "$mn" -a "$rs" != "$mn"
check "resample changes the SATFormer's loss (ΔL $drs)" awk -v d="$drs" 'BEGIN { exit !(d != "" && d + 0 != 0) }'

A hg --mode resample --no-db; rc=$?
dh=$(js "$W/out" delta_loss)
check "a gate that is already constant (static head gate): resample gives ΔL = 0 ($dh)" \
    awk -v d="$dh" -v rc=$rc 'BEGIN { exit !(rc == 0 && d != "" && d + 0 == 0) }'
A hg --mode mean --no-db
check "…where mean ablation is refused as a no-op" grep -q "mean ablation changes nothing" "$W/out"
A rf --mode resample --no-db; rc=$?
check "ResFormer's per-block constants: resample refused with the reason" \
    eval '[ $rc != 0 ] && grep -q "resampling them from other tokens changes nothing; use --mode zero" "$W/out"'

# logged and tabled beside zero and mean, for a selection too
A sat --mode resample --heads 2:1; rc1=$?
A sat --mode zero; rc2=$?
check "resample --heads 2:1 and zero log their rows (exit 0)" test $rc1 = 0 -a $rc2 = 0
check "registry rows resample.L2H1.{base_loss,loss,delta_loss,ppl_ratio} on the same windows as zero.all" \
    test "$(q "select count(*) from metrics a join metrics z on z.run_id = a.run_id and z.name = 'zero.delta_loss'
               and z.params = '{\"gates\":\"all\"}' and z.win_first = a.win_first and z.win_count = a.win_count
               where a.run_id = 'sat' and a.split = 'ablation' and a.params = '{\"gates\":\"L2H1\"}'
               and a.name in ('resample.base_loss','resample.loss','resample.delta_loss','resample.ppl_ratio')")" = 4
"$BIN" tables --results "$R" > "$W/tb" 2>&1
check "the ablations table lists resample beside zero and mean" \
    eval 'grep -q "| resample | L2H1 |" "$R/tables/ablations.md" && grep -q "| zero | all |" "$R/tables/ablations.md" && grep -q "| mean | all |" "$R/tables/ablations.md"'
"$BIN" figures --results "$R" > "$W/fg" 2> "$W/fg.err"
check "the ablation bars of the run draw resample with a readable label" \
    eval '[ ! -s "$W/fg.err" ] && grep -q "α resampled from other tokens (L2H1)" "$R/figures/all/data/ablation_sat.tsv"'
