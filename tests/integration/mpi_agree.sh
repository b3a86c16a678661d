#!/usr/bin/env bash
# mpi_agree.sh — ranks that disagree stop before they train (issue 28.8):
# with one rank given another d_ff, another train.steps, or data with another
# vocabulary (each rank picks its own override or GATELAB_DATA from its MPI
# rank), `mpirun -np 2 gatelab-mpi train` prints one line from rank 0 naming
# the first differing key with both values, every rank exits non-zero (no
# MPI_ERR_TRUNCATE, no heap corruption, no hang), and nothing is registered
# or written in the run folder.  The ranks agree through one allgather of
# fixed-size digests (harness/run/dist_mpi.c: dist_agree_items).
set -u
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
R="$W/results"
MPIBIN="${GATELAB_MPI_BIN:-$BIN-mpi}"
command -v mpirun > /dev/null 2>&1 || { skip "MPI agreement (mpirun not found: apt-get install openmpi-bin)"; exit 0; }
[ -x "$MPIBIN" ] || { skip "MPI agreement ($MPIBIN is not built: make builds it when pkg-config finds ompi-c)"; exit 0; }
export GATELAB_DATA="$W/data"
make_corpus "$W/data/corpus.txt"
mkdir -p "$W/data2" && tr 'e' 'E' < "$W/data/corpus.txt" | head -c 200000 > "$W/data2/corpus.txt"  # another vocabulary
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# rank-specific: rank 1 adds $RANK1_OVER (one key=value) or reads $RANK1_DATA
cat > "$W/rank.sh" <<SH
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:-0}
extra=()
if [ "\$r" = 1 ]; then
    [ -n "\${RANK1_OVER:-}" ] && extra+=("\$RANK1_OVER")
    [ -n "\${RANK1_DATA:-}" ] && export GATELAB_DATA="\$RANK1_DATA"
fi
"$MPIBIN" train "$TINY" train.threads=1 "\${extra[@]}" "\$@"
rc=\$?
echo \$rc > "$W/rc.\$r"
exit \$rc
SH
chmod +x "$W/rank.sh"
mpi2() { timeout 120 mpirun --oversubscribe --bind-to none -np 2 -x RANK1_OVER -x RANK1_DATA -x GATELAB_DATA "$W/rank.sh" "$@"; }

export RANK1_OVER= RANK1_DATA=
mpi2 --run-id same --results "$R" --quiet > "$W/same.out" 2>&1
check "2 ranks that agree train (exit $?)" test -f "$R/runs/same/ckpt"

n=0
for case in "model.d_ff=96|model.d_ff|64|96" "train.steps=30|train.steps|40|30" "DATA|data (SHA-256 of data.file)||"; do
    IFS='|' read -r over key v0 v1 <<< "$case"
    n=$((n + 1)); id="bad$n"
    if [ "$over" = DATA ]; then export RANK1_OVER= RANK1_DATA="$W/data2"; else export RANK1_OVER="$over" RANK1_DATA=; fi
    rm -f "$W"/rc.*
    start=$(date +%s)
    mpi2 --run-id "$id" --results "$R" --quiet > "$W/$id.out" 2>&1; rc=$?
    took=$(( $(date +%s) - start ))
    lines=$(grep -c 'disagrees with rank 0' "$W/$id.out")
    check "rank 1 with $over: exit $rc (non-zero, no hang: ${took} s)" bash -c "test $rc -ne 0 -a $rc -ne 124"
    want="rank 1 disagrees with rank 0 on $key: rank 0 has '$v0"; [ -n "$v1" ] && want="$want', rank 1 has '$v1'"
    check "... one line from rank 0 names $key${v0:+ ($v0 vs $v1)}" \
        bash -c "test $lines -eq 1 && printf '%s\n' \"\$1\" | grep -qFf - '$W/$id.out'" _ "$want"
    # Both ranks exit 1 at the same point, but once one has, mpirun stops the others: a rank whose
    # wrapper was stopped before it wrote its status has no rc file (either rank: whichever exits
    # first). A rank that trained would write 0, so the property is that no rank wrote 0 and at
    # least one wrote its non-zero status.
    check "... no rank exits 0 (rank 0: $(cat "$W/rc.0" 2>/dev/null || echo 'stopped by mpirun'), rank 1: $(cat "$W/rc.1" 2>/dev/null || echo 'stopped by mpirun'))" \
        bash -c "{ test -e '$W/rc.0' || test -e '$W/rc.1'; } &&
                 { test ! -e '$W/rc.0' || test \"\$(cat '$W/rc.0')\" -ne 0; } &&
                 { test ! -e '$W/rc.1' || test \"\$(cat '$W/rc.1')\" -ne 0; }"
    check "... no MPI error, no crash" bash -c "! grep -qiE 'MPI_ERR|munmap|invalid pointer|Segmentation|core dumped|AddressSanitizer' '$W/$id.out'"
    check "... nothing registered, no run folder" \
        bash -c "test ! -e '$R/runs/$id' && test \"\$(sqlite3 '$R/gatelab.db' \"select count(*) from runs where run_id='$id'\")\" = 0"
done
