#!/usr/bin/env bash
# sweep_axes.sh — what a sweep may vary, and the Slurm script's own options,
# on the real binary:
#
#   a list on a key that is not a [sweep] axis: exit 2, nothing written, a
#   message that says how to declare it (the [sweep] section or --axis);
#   --axis adds the axis; range(start, stop[, step]) and choice(...) on the
#   command line and in a manifest's [sweep]; every line of the paper plans
#   (experiments/paper/*.plan) expands; the ETA on the progress line of a
#   real 3-run sweep; --emit-slurm with --time --mem --partition --nodes, the
#   USR1 trap that stops the training and requeues the task (checked as
#   text: there is no Slurm here), --axis replayed into the task command, and
#   bad values for those flags refused.
#
# Prints one PASS/FAIL line per check.  Needs $GATELAB_BIN.
set -u
. "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W="$(mktemp -d "${TMPDIR:-/tmp}/gatelab-sweepaxes-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT; echo "work folder: $W"
export GATELAB_DATA="$W/data"
make_corpus "$GATELAB_DATA/corpus.txt"
cd "$W" || exit 1
export GATELAB_ROOT="$ROOT" # experiments/scales.ini for the paper manifests
# a TSA model: the λ axes below act on it (an override of a knob the variant does not read is refused)
sed 's/^\[model\]$/[model]\ndepth_routing = tsa/' "$TINY" > tiny.ini
printf '\n[sweep]\nseed = 1, 2\n' >> tiny.ini

# 1. The rule: a list needs a declared axis.
"$BIN" sweep tiny.ini lambda=0,0.1 --results bad > bad.out 2> bad.err; rc=$?
check "a list on a key that is not an axis: exit 2, nothing written" [ "$rc" -eq 2 -a ! -e bad ]
check "... and the message says how to declare it" bash -c "grep -q 'model.tsa_lambda is not a sweep axis' bad.err &&
    grep -q '\[sweep\] section' bad.err && grep -q -- '--axis lambda=0,0.1' bad.err"
"$BIN" sweep tiny.ini seed=3,4,5 --dry-run > axis_list.out 2>&1; rc=$?
check "a list on a declared axis replaces it (3 runs)" bash -c "[ $rc -eq 0 ] && grep -q '^sweep tiny: 3 runs' axis_list.out"
"$BIN" sweep tiny.ini --axis lambda=0,0.1 --dry-run > axis.out 2>&1; rc=$?
check "--axis adds the axis after the manifest's (2 x 2 runs, seed slowest)" bash -c "[ $rc -eq 0 ] &&
    grep -q '^sweep tiny: 4 runs' axis.out && grep -q '^    1 .*train.seed=1 model.tsa_lambda=0.1$' axis.out"
"$BIN" sweep tiny.ini train.steps=30 --dry-run > fixed.out 2>&1; rc=$?
check "one value on a key that is not an axis is still a fixed override" bash -c "[ $rc -eq 0 ] &&
    grep -q '^fixed: train.steps=30' fixed.out"
"$BIN" sweep tiny.ini --axis lambda=0,zero --dry-run > axbad.out 2>&1; rc=$?
check "--axis with a bad item: exit 2, names it" bash -c "[ $rc -eq 2 ] && grep -q 'zero' axbad.out"

# 2. range() and choice().
"$BIN" sweep tiny.ini --axis 'lambda=range(0, 0.1, 0.025)' 'seed=choice(7, 8)' --dry-run > range.out 2>&1; rc=$?
check "range(0, 0.1, 0.025) x choice(7, 8): 8 runs, 0.075 the last lambda, stop excluded" bash -c "[ $rc -eq 0 ] &&
    grep -q '^sweep tiny: 8 runs' range.out && grep -q '^    7 .*train.seed=8 model.tsa_lambda=0.075$' range.out &&
    ! grep -q 'tsa_lambda=0.1$' range.out"
cp "$TINY" ranged.ini
printf '\n[sweep]\nsteps = range(10, 40, 10)\n' >> ranged.ini
"$BIN" sweep ranged.ini --dry-run > ranged.out 2>&1; rc=$?
check "range() in a manifest's [sweep]: 10, 20, 30" bash -c "[ $rc -eq 0 ] && grep -q '^sweep ranged: 3 runs' ranged.out &&
    grep -q 'train.steps=30$' ranged.out"
"$BIN" sweep tiny.ini 'seed=range(5, 1)' --dry-run > empty.out 2>&1; rc=$?
check "an empty range: exit 2, says why" bash -c "[ $rc -eq 2 ] && grep -q 'is empty' empty.out"

# 3. Every line of the paper plans expands with the new rule (scripts/paper.sh passes the words as they are).
plans_ok=1
for plan in "$ROOT"/experiments/paper/*.plan; do
    while read -r group manifest claims args; do
        # shellcheck disable=SC2086
        if ! "$BIN" sweep "$ROOT/experiments/paper/$manifest" $args log.experiment="paper-$group" --dry-run \
            > plan.out 2>&1; then
            echo "plan $(basename "$plan") line $group: $(head -2 plan.out)"
            plans_ok=0
        fi
    done < <(grep -vE '^\s*(#|$)' "$plan")
done
check "every line of experiments/paper/*.plan expands" [ "$plans_ok" = 1 ]

# 4. ETA: a real 3-run sweep, one at a time; after the first run finishes the progress line estimates the rest.
"$BIN" sweep tiny.ini seed=1,2,3 train.threads=1 train.steps=10 -j 1 --results eta > eta.out 2> eta.err; rc=$?
check "a 3-run sweep finishes" [ "$rc" -eq 0 ]
check "the progress line carries an ETA once a run has finished" bash -c "
    grep -q '^\[sweep tiny: 1/3 done, 1 running, 0 failed, ETA [0-9hms]*\] started' eta.err &&
    ! grep -q '^\[sweep tiny: 0/3 done.*ETA' eta.err"
# ... and one finished run whose first attempt started a day before it ended (resumed in a later
# session) does not make the estimate a day: the grid's median is used, then this invocation's runs.
sqlite3 eta/gatelab.db "update runs set start_time = start_time - 86400 where rowid = (select min(rowid) from runs)"
"$BIN" sweep tiny.ini seed=1,2,3,4,5 train.threads=1 train.steps=10 -j 1 --results eta > eta2.out 2> eta2.err; rc=$?
check "the grid extended to 5 runs finishes the 2 new ones (exit $rc)" [ "$rc" -eq 0 ]
check "a run resumed a day later does not make the ETA hours (the first line: $(grep -m1 '^\[sweep tiny: 3/5' eta2.err | cut -c1-60))" \
    bash -c "grep -q '^\[sweep tiny: 3/5 done, 0 running, 0 failed, ETA [0-9]*[ms]*\]' eta2.err &&
             ! grep -q 'ETA [0-9]*h' eta2.err"

# 5. The Slurm script: resources, requeue on USR1, --axis replayed.
"$BIN" sweep tiny.ini --axis lambda=0,0.1 train.steps=10 --emit-slurm job.sh --time 4:00:00 --mem 8G \
    --partition gpu,cpu --nodes 1 --results slurm > emit.out 2>&1; rc=$?
check "--emit-slurm with --time --mem --partition --nodes" [ "$rc" -eq 0 -a -f job.sh ]
check "#SBATCH --time, --mem, --partition, --nodes, --requeue, --open-mode=append" bash -c "
    grep -q '^#SBATCH --time=4:00:00$' job.sh && grep -q '^#SBATCH --mem=8G$' job.sh &&
    grep -q '^#SBATCH --partition=gpu,cpu$' job.sh && grep -q '^#SBATCH --nodes=1$' job.sh &&
    grep -q '^#SBATCH --requeue$' job.sh && grep -q '^#SBATCH --open-mode=append$' job.sh"
check "USR1: the trap stops the training (it checkpoints) and the task requeues itself" bash -c "
    grep -q \"^trap 'requeue=1; kill -TERM \\\$pid 2>/dev/null' USR1\$\" job.sh &&
    grep -q 'scontrol requeue \"\$SLURM_JOB_ID\"' job.sh &&
    grep -q '^if \[ \"\$requeue\" = 1 \] && \[ \"\$rc\" -ne 0 \]; then' job.sh"
check "the registry is saved before the requeue" bash -c "
    [ \$(grep -n 'mv \"\$out_db.tmp\" \"\$out_db\"' job.sh | cut -d: -f1) -lt \$(grep -n '^    scontrol requeue' job.sh | cut -d: -f1) ]"
check "the task command replays --axis and the fixed override; the script parses" bash -c "
    grep -q \" --axis 'lambda=0,0.1' 'train.steps=10' \" job.sh && bash -n job.sh"
check "a requeued task resumes: it restores its registry copy, and --index resumes a run with a checkpoint" bash -c "
    grep -q '\[ -f \"\$out_db\" \] && \[ ! -f \"\$task_db\" \] && cp \"\$out_db\" \"\$task_db\"' job.sh"
"$BIN" sweep tiny.ini --emit-slurm job2.sh --time '4 hours' > t.out 2>&1; rc=$?
check "--time '4 hours': exit 2, says the form" bash -c "[ $rc -eq 2 ] && grep -q 'H:MM:SS' t.out && [ ! -e job2.sh ]"
"$BIN" sweep tiny.ini --emit-slurm job2.sh --mem lots > m.out 2>&1; rc=$?
check "--mem lots: exit 2" [ "$rc" -eq 2 -a ! -e job2.sh ]
"$BIN" sweep tiny.ini --emit-slurm job2.sh --partition 'a;reboot' > p.out 2>&1; rc=$?
check "--partition with a shell character: exit 2" [ "$rc" -eq 2 -a ! -e job2.sh ]
"$BIN" sweep tiny.ini --time 1:00:00 --dry-run > nt.out 2>&1; rc=$?
check "--time without --emit-slurm: exit 2, says to use it with --emit-slurm" bash -c "[ $rc -eq 2 ] && grep -q -- '--emit-slurm' nt.out"
"$BIN" sweep tiny.ini --emit-slurm job3.sh > plain.out 2>&1
check "without them the script says how to add time, memory and partition" bash -c "
    ! grep -q '^#SBATCH --time' job3.sh && grep -q -- '--time, --mem, --partition' job3.sh"
