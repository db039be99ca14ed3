# gpuenv shell integration for bash: eval "$(gpuenv hook bash)" in ~/.bashrc
export GPUENV_SHELL=bash

# nvcc, hipcc and every other toolchain tool resolve through the shims first.
case ":${PATH}:" in
    *:@SHIMS@:*) ;;
    *) export PATH=@SHIMS@"${PATH:+:${PATH}}" ;;
esac

# Redefined by every hook-env run: true while nothing that run depended on has changed.
_gpuenv_fresh() { return 1; }
# Redefined by every hook-env run that moved the shell: back in the directory before it,
# with nothing changed since, puts that directory's environment back (builtins only).
_gpuenv_back() { return 1; }

_gpuenv_hook() {
    local previous_exit_status=$? code
    # Ctrl-C aborts this function and bash then runs PROMPT_COMMAND again for the new
    # prompt: the flag left set says so, and that prompt comes without asking gpuenv. The
    # next command's prompt asks again.
    if [[ -n "${_gpuenv_interrupted-}" ]]; then
        _gpuenv_interrupted=
        return $previous_exit_status
    fi
    # Nothing changed: no process at all (builtins only until here).
    _gpuenv_fresh && return $previous_exit_status
    _gpuenv_back && return $previous_exit_status
    # Ctrl-C while gpuenv works stops it and gives the prompt back; a run that did not
    # finish changes nothing.
    _gpuenv_interrupted=1
    # The user's INT trap is read in the subshell that then becomes gpuenv (bash keeps a
    # trap's text there for `trap -p`): a `$(trap -p SIGINT)` of its own would be a second
    # fork at every such prompt. It comes first, as a function that puts it back.
    code="$(
        printf '_gpuenv_user_trap() {\ntrap - SIGINT\n'
        trap -p SIGINT
        printf '\n}\n'
        exec @PROMPT@ hook-env --shell bash
    )"
    local status=$?
    # Killed by a signal: the flag stays for the prompt that follows.
    ((status > 128)) && return $previous_exit_status
    _gpuenv_interrupted=
    ((status == 0)) || return $previous_exit_status
    # Applying it is not interruptible half-way; the user's own INT trap is put back.
    trap -- '' SIGINT
    eval "$code"
    _gpuenv_user_trap
    unset -f _gpuenv_user_trap
    return $previous_exit_status
}

# `gpuenv use` changes this shell; everything else is the binary.
gpuenv() {
    if [[ "${1:-}" == use ]]; then
        shift
        local code
        code="$(@GPUENV@ use --print --shell bash "$@")" || return $?
        eval "$code"
    else
        @GPUENV@ "$@"
    fi
}

# Run before every prompt, alongside an existing PROMPT_COMMAND (string or array) and
# other hooks such as direnv's.
_gpuenv_hooked() {
    local cmd
    for cmd in "${PROMPT_COMMAND[@]}"; do
        [[ ";${cmd};" == *";_gpuenv_hook;"* ]] && return 0
    done
    return 1
}
if ! _gpuenv_hooked; then
    if [[ "$(declare -p PROMPT_COMMAND 2>&1)" == "declare -a"* ]]; then
        PROMPT_COMMAND=(_gpuenv_hook "${PROMPT_COMMAND[@]}")
    else
        PROMPT_COMMAND="_gpuenv_hook${PROMPT_COMMAND:+;${PROMPT_COMMAND}}"
    fi
fi
