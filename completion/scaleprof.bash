# bash completion for scaleprof(1): verbs, each verb's options, and the
# trace directories (or files) a verb takes.
#
# Nothing here lists a verb or an option: both are read from the command
# itself, `scaleprof --help` for the verbs and `scaleprof VERB --help` for
# a verb's options (the lines of its option table), once per shell and
# command path.  So the completion is whatever the installed scaleprof
# accepts, and a new verb or option needs no change here.  What a
# positional argument is comes from the verb's usage line: DIR completes
# directories, FILE files, CMD (run's -- CMD...) commands.  An option whose
# value is written DIR or FILE in the table completes those; other values
# (N, A:B, RE) complete nothing.
#
# Install: meson install puts this file in
# $datadir/bash-completion/completions/scaleprof, where bash-completion
# finds it; or `source` it from ~/.bashrc.

declare -gA _scaleprof_cache

# _scaleprof_help CMD [VERB]: the help text, cached.
_scaleprof_help()
{
    local key="$1|$2"
    if [[ -z ${_scaleprof_cache[$key]+set} ]]; then
        if [[ -n $2 ]]; then
            _scaleprof_cache[$key]=$("$1" "$2" --help 2>/dev/null)
        else
            _scaleprof_cache[$key]=$("$1" --help 2>/dev/null)
        fi
    fi
    printf '%s\n' "${_scaleprof_cache[$key]}"
}

# The verbs: the "  NAME  summary" lines under "Verbs:".
_scaleprof_verbs()
{
    _scaleprof_help "$1" | sed -n '/Verbs:/,/^$/s/^  \([a-z][a-z0-9-]*\)  *[^ ].*/\1/p'
}

# A verb's options, one "OPTION ARG" per line (ARG empty when it takes
# none): the option column of each table line that starts with a dash,
# cut at the first two spaces.
_scaleprof_options()
{
    local line col part opt arg
    while IFS= read -r line; do
        [[ $line =~ ^[[:space:]]+- ]] || continue
        col=${line#"${line%%[![:space:]]*}"}
        col=${col%%  *}
        # "-o, --output DIR": the value's name is written once, last
        arg=${col##*, }
        arg=${arg#* }
        arg=${arg%% *}
        [[ $arg =~ ^[A-Z][A-Z0-9_:.]*$ ]] || arg=
        local IFS=','
        for part in $col; do
            part=${part# }
            [[ $part == -* ]] || continue
            opt=${part%% *}
            opt=${opt%%[\[=]*}
            opt=${opt%%[\)\(:]*}
            [[ $opt =~ ^--?[A-Za-z][A-Za-z0-9_-]*$ ]] && printf '%s %s\n' "$opt" "$arg"
        done
        unset IFS
    done < <(_scaleprof_help "$1" "$2")
}

# What a verb's operands are: DIR, FILE or CMD, from its usage line.
_scaleprof_operand()
{
    local usage
    usage=$(_scaleprof_help "$1" "$2" | sed -n '1s/^usage: *//p')
    case $usage in
    *'-- CMD'*) echo CMD ;;
    *FILE...* | *"$2 FILE"* | *"$2 ["*"] FILE"*) echo FILE ;;
    *DIR*) echo DIR ;;
    esac
}

_scaleprof_files()
{
    local IFS=$'\n'
    if [[ $1 == DIR ]]; then
        COMPREPLY=($(compgen -d -- "$2"))
    else
        COMPREPLY=($(compgen -f -- "$2"))
    fi
    # a directory completes with its slash, so the next tab goes inside
    compopt -o filenames 2>/dev/null
}

_scaleprof()
{
    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[0]} verb= i
    local prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) verb=${COMP_WORDS[i]}; break ;;
        esac
    done
    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_scaleprof_verbs "$cmd") help" -- "$cur"))
        fi
        return 0
    fi
    if [[ $verb == help ]]; then
        ((COMP_CWORD == i + 1)) && COMPREPLY=($(compgen -W "$(_scaleprof_verbs "$cmd")" -- "$cur"))
        return 0
    fi
    # run: after "--" the job's command line
    for ((j = i + 1; j < COMP_CWORD; j++)); do
        if [[ ${COMP_WORDS[j]} == -- ]]; then
            if ((COMP_CWORD == j + 1)); then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                _scaleprof_files FILE "$cur"
            fi
            return 0
        fi
    done
    local opts
    opts=$(_scaleprof_options "$cmd" "$verb")
    local arg
    arg=$(printf '%s\n' "$opts" | awk -v o="$prev" '$1 == o { print $2; exit }')
    if [[ $prev == -* && -n $arg ]]; then
        case $arg in
        DIR | FILE | LIB) _scaleprof_files "$([[ $arg == DIR ]] && echo DIR || echo FILE)" "$cur" ;;
        esac
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(printf '%s\n' "$opts" | awk '{ print $1 }')" -- "$cur"))
        return 0
    fi
    # import's first operand is the format
    if [[ $verb == import && $COMP_CWORD == $((i + 1)) ]]; then
        COMPREPLY=($(compgen -W "$(_scaleprof_help "$cmd" import | sed -n '1s/^usage: scaleprof import \([a-z]*\).*/\1/p')" -- "$cur"))
        return 0
    fi
    case $(_scaleprof_operand "$cmd" "$verb") in
    DIR) _scaleprof_files DIR "$cur" ;;
    FILE) _scaleprof_files FILE "$cur" ;;
    CMD) COMPREPLY=($(compgen -W "$(printf '%s\n' "$opts" | awk '{ print $1 }') --" -- "$cur")) ;;
    esac
    return 0
}

complete -F _scaleprof scaleprof
