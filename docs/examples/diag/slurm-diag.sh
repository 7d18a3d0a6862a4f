#!/bin/bash
# Slurm Prolog, Epilog and HealthCheckProgram for GPU nodes: envdoctor diag, and a drain on FAIL.
#
#   slurm.conf:  Prolog=/etc/slurm/slurm-diag.sh            (level 1 before every job, ~10 s)
#                Epilog=/etc/slurm/slurm-diag.sh            (DIAG_LEVEL=1; 2 for a deeper look after jobs)
#                HealthCheckProgram=/etc/slurm/slurm-diag.sh
#                HealthCheckInterval=300
#
# envdoctor itself never runs scontrol: this script does, with the line it prints. Exit codes of
# envdoctor diag: 0 PASS or WARN (the node stays), 1 FAIL, 2 could not start (no GPU, no torch):
# both drain with the verdict line as the reason; 3 is envdoctor's own bug: logged, no drain.
# A non-zero exit of a Prolog makes Slurm requeue the job and drain the node too; the reason set
# here says why.
LEVEL=${DIAG_LEVEL:-1}
ENVDOCTOR=${ENVDOCTOR:-envdoctor}
SCONTROL=${SCONTROL:-scontrol}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
case $LEVEL in 1) LIMIT=60 ;; 2) LIMIT=300 ;; *) LIMIT=1200 ;; esac

out=$(timeout "$LIMIT" $ENVDOCTOR diag -r "$LEVEL" -q --color never 2>&1)
rc=$?
verdict=$(printf '%s\n' "$out" | grep '^verdict:' | tail -n 1)
case $rc in
  0) exit 0 ;;
  1|2) reason="envdoctor diag -r $LEVEL ${verdict#verdict: }" ;;
  124) reason="envdoctor diag -r $LEVEL did not finish in $LIMIT s" ;;
  *) logger -t envdoctor-diag "envdoctor diag failed itself (exit $rc): ${verdict:-no verdict}" 2>/dev/null
     exit 0 ;;
esac
reason=$(printf '%s' "$reason" | tr -d '"\n' | cut -c1-240)
echo "$SCONTROL update nodename=$NODE state=drain reason=\"$reason\""
$SCONTROL update nodename="$NODE" state=drain reason="$reason"
exit 1
