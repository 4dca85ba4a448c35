#!/bin/bash
# Grade a class on a Slurm cluster: a job array of TASKS graders, one GPU each,
# then one job that merges their feedback files into the CSV (it runs when all
# tasks have ended, and names any student left ungraded: submit again to finish,
# graded students are skipped). The grades go where `grade` puts them by default,
# <folder>.grades/<step>/ beside the submissions, unless the options say --out
# or --json.
#
#   autograder/grade/slurm/submit.sh TASKS SUBMISSIONS_DIR STEP [grade options...]
#
# e.g. autograder/grade/slurm/submit.sh 8 submitted 05 --timings 3
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 TASKS SUBMISSIONS_DIR STEP [grade options...]" >&2
  exit 2
fi
tasks=$1 dir=$2 step=$3
shift 3
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  echo "$0: unexpected '$1': the CSV is now an option (--out $1) and may be left out" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable --array=1-"$tasks" "$here/grade_array.sbatch" "$dir" "$step" "$@")
merge_command=$(printf '%q ' "${PYTHON:-python3}" -m autograder grade "$dir" --assignment "$step" \
  "$@" --merge)
merge=$(sbatch --parsable --dependency=afterany:"$array" --job-name=sgemm-grade-merge \
  --output="slurm-%j-merge.out" --wrap "$merge_command")
echo "job array $array grades $dir in $tasks tasks; job $merge then writes the CSV"
