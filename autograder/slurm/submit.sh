#!/bin/bash
# Grade a class on a Slurm cluster: a job array of TASKS graders, one GPU each,
# then one job that merges their feedback files into OUT.csv (it runs when all
# tasks have ended, and names any student left ungraded: submit again to finish,
# graded students are skipped).
#
#   autograder/slurm/submit.sh TASKS SUBMISSIONS_DIR STEP OUT.csv [grade options...]
#
# e.g. autograder/slurm/submit.sh 8 submitted 05 grades_05.csv --timings 3
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 TASKS SUBMISSIONS_DIR STEP OUT.csv [grade options...]" >&2
  exit 2
fi
tasks=$1 dir=$2 step=$3 out=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable --array=1-"$tasks" "$here/grade_array.sbatch" "$dir" "$step" "$out" "$@")
merge_command=$(printf '%q ' "${PYTHON:-python3}" -m autograder grade "$dir" --assignment "$step" \
  --out "$out" "$@" --merge)
merge=$(sbatch --parsable --dependency=afterany:"$array" --job-name=sgemm-grade-merge \
  --output="slurm-%j-merge.out" --wrap "$merge_command")
echo "job array $array grades $dir in $tasks tasks; job $merge then writes $out"
