/**
 * The one command that lists every run root of a target in a single round trip. The script text is a constant;
 * roots and limits travel as positional arguments (`sh -c SCRIPT sh DEPTH LIMIT ROOT...`), so a path is never
 * part of the script and needs no quoting beyond the runner's one shellJoin.
 *
 * Output protocol (parsed by listParse.ts): NUL-terminated fields, each record led by a tag field.
 *   `\0@rr-list@3\0`                         magic; rc-file noise before it is skipped
 *   `T\0<epoch seconds>\0`                   the remote clock
 *   `R\0<index>\0<status>\0<path>\0`         a root: status ok | missing | notdir | denied; path with ~ expanded
 *   `E\0<type>\0<bytes>\0<mtime>\0<rel>\0<extra>\0`
 *                                           an entry under the last ok root (find -printf %y %s %T@ %P); extra is
 *                                           empty, `K<target>` for a symlink (readlink's text; type is the followed
 *                                           one; every link to a folder has it, and is never entered) or `C<text>`
 *                                           for a small pointer file (its first 256 bytes, no NULs; `latest*` files
 *                                           up to 256 bytes, TensorFlow's `checkpoint` up to 4 KiB)
 *   `N\0<depth>\0<type>\0<bytes>\0<mtime>\0<name>\0<extra>\0`
 *                                           the same entry by its depth below the walk's folder and its name (find
 *                                           -printf %d %f; GNU find): it lies in the last entry printed one level up
 *                                           (find prints a folder before what it holds), or in the walk's folder at
 *                                           depth 1. Fewer bytes, and no path for the parser to cut up
 *   `P\0<name>\0`                           (fair mode) the entries that follow are below the root's folder NAME
 *                                           (their rel is relative to it); an empty NAME ends that
 *   `B\0<rel>\0<count>\0`                    (fair mode) folder REL holds COUNT entries (`N+`: more than N), more than its share: only
 *                                           part of it was listed (rel empty: the root itself)
 *   `X\0<index>\0<find errors>\0`            end of an ok root: "count\nfirst error\n…" (at most 3 lines)
 *   `Z\0`                                    end of output
 * Each ok root prints at most LIMIT+1 entries (E or N); the parser treats LIMIT+1 as "truncated" and drops the extra.
 */
import type { RemoteCommand } from '../remote';
import type { RootListing } from '../types';
import { listOutputReader, parseListOutput } from './listParse';
export { LIST_MAGIC } from './listParse';

/**
 * Records per root before a listing is cut short (and says so). 50 runs × 100 step folders is ~10,200 entries;
 * this leaves room for four times that (~3 MB of output, well under a second to parse) while a directory of
 * millions of files still cannot hang the tree.
 */
export const DEFAULT_MAX_ENTRIES = 40_000;
/**
 * root/run/checkpoints/step_N/file is depth 4; Hydra's outputs/DATE/TIME/ under the root adds 2 and Megatron's
 * iter_N/mp_rank_00/ one more: 7. A checkpoint folder reaching it is listed with `partialSize` (its size is a lower
 * bound), never as empty.
 */
export const DEFAULT_MAX_DEPTH = 7;


/** `${` cannot be written inside String.raw; the script's parameter expansions interpolate it. */
const P = '${';

/**
 * Walk choices, and why:
 * - A walk stays inside what it walks: the root itself may be a link (followed), but a link to a folder below it is
 *   listed (as a folder, with its target in a K record) and never entered. `find -L` with `-type d -xtype l … -prune`
 *   (under -L, -xtype tests the link itself: find(1)), as the pull's walk does (transfer/remoteCommands.ts): a
 *   checkpoint that is a link to `/`, or one holding `up -> ../../..`, would otherwise list the remote filesystem into
 *   the run (its size summed over `/`) and spend the entry budget there, hiding the checkpoints beside it. A link to a
 *   folder inside the root is listed where it really is; one leaving the root is shown as a link with its target.
 *   -L still follows links to files (their size and type are their target's: Hugging Face's cache links each file
 *   into a blob store) and tells special files by what a link leads to (a FIFO, `/dev/zero`); loops are find's
 *   errors on stderr (counted), never descended; -maxdepth bounds the walk anyway. The extra lstat of -xtype is
 *   paid by folders only (-type d is tested first, from the stat find has already).
 * - Folders that never hold runs but can hold hundreds of thousands of files are pruned, so they do not eat
 *   the entry budget: .git, node_modules, __pycache__, virtualenvs, caches, notebook checkpoints, and our own
 *   `.remote-runs` (eval records, whose results.jsonl would look like a run).
 * - find's errors (unreadable folders, loops) are counted by the shell, which keeps three; the listing itself
 *   never stops for them. `Broken pipe` (and SIGPIPE, 13) is our own `head` closing early, not an error.
 * - Without GNU find's -printf (busybox), entries are printed by a slower stat loop with the same format;
 *   that path does not follow symlinks below the root (busybox find -L has no loop detection).
 */
export const LIST_SCRIPT = String.raw`
exec 3>&1
mode=$1; depth=$2; limit=$3; shift 3
# Names are bytes: the C locale matches them as bytes (in a UTF-8 one every -name decodes them first, and a name
# that is not UTF-8 may not match), and find's messages come in one language.
LC_ALL=C; export LC_ALL
# The remote clock and whether find is GNU's (has -printf), from one process: the /proc/PID folder of that very
# find is made when it is first looked up, so its time is now (the /proc/self link itself is as old as /proc, hence
# -L). Without that (busybox find, no /proc), date and a probe of find as before.
now=$(find -L /proc/self -maxdepth 0 -printf '%T@' 2>/dev/null)
case $now in
  [0-9]*.[0-9]*) gnu=1 ;;
  *) now=$(date +%s); if find / -maxdepth 0 -printf '' >/dev/null 2>&1; then gnu=1; else gnu=0; fi ;;
esac
if [ "$gnu" = 1 ]; then follow=-L; dirlink='-type d -xtype l'; else follow=; dirlink='-type l'; fi
printf '\0@rr-list@3\0T\0%s\0' "$now"
# Pointer files: the name a framework writes its own "latest" into (DeepSpeed's latest, Megatron-LM's
# latest_checkpointed_iteration.txt, TensorFlow/Keras' checkpoint); read when small (NULs dropped).
# TensorFlow's state file grows with the saves it keeps (343 bytes for three): taken up to 4 KiB, its first 256 bytes
# (model_checkpoint_path is its first line).
pointers='-name checkpoint -o -size -257c ( -name latest -o -name latest_checkpointed_iteration.txt )'
prunenames='.git node_modules __pycache__ .venv venv .cache .ipynb_checkpoints .remote-runs'
prune=; for x in $prunenames; do prune="$prune${P}prune:+ -o }-name $x"; done
# One cheap test of the first letter before the eight names, and -prune inside the group: GNU find reorders the
# operands of an and by its guess of their success, which for a wildcard -name is higher than for eight plain names,
# and would test all eight on every entry (find -D rates shows it; a third of the walk's CPU on a large tree);
# the group holding -prune costs more than a -name, so the first-letter test stays first.
prune="-name [._nv]* ( ( $prune ) -prune )"
# walk DIR MINDEPTH MAXDEPTH CAP: entries below DIR (paths relative to it), at most CAP of them.
walk() {
  # $prune and $pointers are split into words but never globbed ([._nv]* is find's pattern, not the shell's).
  set -f
  if [ "$gnu" = 1 ]; then
    # Pruned folders are still printed (so a root holding only .git is not "empty"), just not entered.
    # Under -L, %y is the followed type and %l is empty; -xtype l still tells a link (one more stat per entry, a
    # quarter of the walk: so only for folders, and for files with names an alias can have, latest*/last*/best*),
    # readlink gives its target. A link to a folder is printed with its target and pruned: never walked into.
    # find flushes its own output before each -exec, so a K or C record always follows its E.
    # The pointer names are tested only on small files (in a group with -exec, which find never moves ahead of
    # -type and -size), not three times on every entry.
    # Each entry is its depth and name (N records): the parser knows the folder it is in from find's order.
    find -L "$1" -mindepth "$2" -maxdepth "$3" \( $prune \) -printf 'N\0%d\0%y\0%s\0%T@\0%f\0\0' \
      -o -type d -xtype l -printf 'N\0%d\0%y\0%s\0%T@\0%f\0' -exec sh -c 'printf "K%s\0" "$(readlink -- "$1")"' sh {} \; -prune \
      -o -name '[lLbB]*' -xtype l -printf 'N\0%d\0%y\0%s\0%T@\0%f\0' -exec sh -c 'printf "K%s\0" "$(readlink -- "$1")"' sh {} \; \
      -o -type f -size -4097c \( \( $pointers \) -printf 'N\0%d\0%y\0%s\0%T@\0%f\0' -exec sh -c 'printf C; head -c 256 -- "$1" | tr -d "\0"; printf "\0"' sh {} \; \) \
      -o -printf 'N\0%d\0%y\0%s\0%T@\0%f\0\0' | head -z -n "$(($4 * 7))"
  else
    # No symlinks followed here: busybox find -L does not detect loops. The root is entered with cd, so a
    # symlinked root still works. Every link to a folder carries its target (K), as with GNU find.
    (cd "$1" && find . -mindepth "$2" -maxdepth "$3" \( $prune \) -print0 -o -print0) | xargs -0 -r sh -c '
      cd "$1" || exit 0; shift
      for f do
        # The followed type, as GNU find -L gives it; a link that leads nowhere is l.
        if [ -d "$f" ]; then t=d; elif [ -f "$f" ]; then t=f; elif [ -L "$f" ]; then t=l; else t=o; fi
        set -- $(stat -L -c "%s %Y" "$f" 2>/dev/null || stat -c "%s %Y" "$f" 2>/dev/null || echo "0 0")
        printf "E\0%s\0%s\0%s\0%s\0" "$t" "$1" "$2" "${P}f#./}"
        if [ -L "$f" ]; then if [ "$t" = d ]; then printf "K%s" "$(readlink "$f")"; else case ${P}f##*/} in [lLbB]*) printf "K%s" "$(readlink "$f")" ;; esac; fi
        elif [ "$t" = f ] && [ "$1" -le 4096 ]; then
          case ${P}f##*/} in
            checkpoint) printf C; head -c 256 "$f" | tr -d "\0" ;;
            latest|latest_checkpointed_iteration.txt) if [ "$1" -le 256 ]; then printf C; head -c 256 "$f" | tr -d "\0"; fi ;;
          esac
        fi
        printf "\0"
      done' sh "$1" | tr '\0\n' '\n\0' | head -n "$(($4 * 6))" | tr '\0\n' '\n\0'
    # busybox head has no -z: NULs and newlines swap places around it, so it counts fields.
  fi
  set +f
}
# fair ROOT: the listing of a root whose plain walk was cut short, in a form that does not depend on directory
# order. The root's own entries come first (one budget entry each); what is left is shared among its folders by
# water-filling their sizes (counted up to the budget, in the same walk): a folder needing less than an equal share
# gets all it needs, the others an equal share of the rest. Each folder's entries follow a P record naming it; a
# folder that got less than it holds is named in a B record with the count seen ("N+": at least N).
fair() {
  cd "$1" || return 0
  n=0
  for c in * .[!.]* ..?*; do { [ -e "$c" ] || [ -L "$c" ]; } && n=$((n + 1)); done
  walk "$1" 1 1 "$limit"
  if [ "$n" -gt "$limit" ]; then printf 'B\0\0%s\0' "$n"; return 0; fi
  # left is not changed below: the counts are capped at left + 1, which B records write as "left+" (at least).
  left=$((limit - n))
  [ "$depth" -gt 1 ] || return 0
  k=0
  shares=$(for c in * .[!.]* ..?*; do
    { [ -e "$c" ] || [ -L "$c" ]; } || continue
    k=$((k + 1))
    # A link to a folder is listed (by the walk above) and never entered.
    [ -d "$c" ] && [ ! -L "$c" ] || continue
    case " $prunenames " in *" $c "*) continue ;; esac
    s=$(set -f; find $follow "./$c" -mindepth 1 -maxdepth $((depth - 1)) \( $prune \) -print -o $dirlink -print -prune -o -print 2>/dev/null | head -n $((left + 1)) | wc -l)
    echo "$s $k"
  done | sort -n | awk -v left="$left" '{ s[NR] = $1; k[NR] = $2 } END { for (j = 1; j <= NR; j++) { share = int(left / (NR - j + 1)); a = s[j] < share ? s[j] : share; left -= a; print k[j], a, s[j] } }')
  # Only numbers reach eval: a folder's index among the root's entries, its share and its size.
  for x in $shares; do
    case $x in *[!0-9]*) return 0 ;; esac
  done
  set -- $shares
  while [ $# -ge 3 ]; do eval "a_$1=$2 s_$1=$3"; shift 3; done
  k=0
  for c in * .[!.]* ..?*; do
    { [ -e "$c" ] || [ -L "$c" ]; } || continue
    k=$((k + 1))
    eval "a=\$a_$k s=\$s_$k"
    [ -n "$a" ] || continue
    printf 'P\0%s\0' "$c"
    [ "$a" -gt 0 ] && walk "$PWD/$c" 1 $((depth - 1)) "$a"
    if [ "$a" -lt "$s" ]; then [ "$s" -gt "$left" ] && s="$left+"; printf 'B\0%s\0%s\0' "$c" "$s"; fi
  done
  printf 'P\0\0'
}
i=0
for r in "$@"; do
  case $r in
    '~') p=$HOME ;;
    '~/'*) p=$HOME/${P}r#'~/'} ;;
    *) p=$r ;;
  esac
  case $p in /*) ;; *) p=$PWD/$p ;; esac
  while :; do case $p in ?*/) p=${P}p%/} ;; *) break ;; esac; done
  if [ ! -e "$p" ]; then
    # A missing path under a folder we may not enter is a permission problem, not a missing path.
    d=$p; st=missing
    while [ "$d" != / ]; do
      d=${P}d%/*}; [ -n "$d" ] || d=/
      if [ -e "$d" ]; then { [ -d "$d" ] && [ ! -x "$d" ]; } && st=denied; break; fi
    done
    printf 'R\0%s\0%s\0%s\0' "$i" "$st" "$p"
  elif [ ! -d "$p" ]; then
    printf 'R\0%s\0notdir\0%s\0' "$i" "$p"
  elif [ ! -r "$p" ] || [ ! -x "$p" ]; then
    printf 'R\0%s\0denied\0%s\0' "$i" "$p"
  else
    printf 'R\0%s\0ok\0%s\0' "$i" "$p"
    if [ "$mode" = fair ]; then run='( fair "$p" )'; else run='walk "$p" 1 "$depth" $((limit + 1))'; fi
    # The walk's errors, counted by the shell itself (no awk process): every line but our own head closing early.
    out=$( { eval "$run"; } 2>&1 >&3 )
    n=0; errs=
    set -f; IFS='
'
    for l in $out; do
      case $l in *'Broken pipe'*|*'write error'*|*'terminated by signal 13'*) continue ;; esac
      n=$((n + 1)); [ "$n" -gt 3 ] || errs="$errs
$l"
    done
    unset IFS; set +f
    printf 'X\0%s\0%s%s\0' "$i" "$n" "$errs"
  fi
  i=$((i + 1))
done
printf 'Z\0'
exit 0
`;

export interface ListOptions {
  /** Entries printed per root before the listing says `truncated` (default 10,000). */
  maxEntries?: number;
  /** How deep below each root the walk goes (default DEFAULT_MAX_DEPTH). */
  maxDepth?: number;
  /**
   * `fair`: list each root with the budget shared among its folders (the script's `fair`), for roots whose plain
   * listing came back cut short; slower (a counting walk per folder), and independent of directory order.
   */
  mode?: 'list' | 'fair';
}

/**
 * One command that lists runs under every root. `~` and `~/…` are expanded to the target's $HOME by the script
 * itself; other roots are taken as written (relative ones against the command's working folder).
 */
export function listRunsCommand(
  roots: string[],
  opts: ListOptions = {},
): RemoteCommand<{ roots: RootListing[]; remoteNow: number }> {
  const maxEntries = positiveInt(opts.maxEntries, DEFAULT_MAX_ENTRIES);
  const maxDepth = positiveInt(opts.maxDepth, DEFAULT_MAX_DEPTH);
  const describe = `list runs in ${roots.join(', ')}`;
  return {
    argv: ['sh', '-c', LIST_SCRIPT, 'sh', opts.mode ?? 'list', String(maxDepth), String(maxEntries), ...roots],
    describe,
    // Far above what LIMIT entries per root print, so the executor's cut only trips on a broken remote.
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (result) => parseListOutput(result, roots, maxEntries, describe, maxDepth),
    // Records are read while the walk still runs; only finding the runs waits for the end.
    reader: () => listOutputReader(roots, maxEntries, describe, maxDepth),
  };
}

function positiveInt(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isInteger(value) && value > 0 ? value : fallback;
}
