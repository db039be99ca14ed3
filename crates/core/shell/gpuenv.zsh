# gpuenv shell integration for zsh: eval "$(gpuenv hook zsh)" in ~/.zshrc
export GPUENV_SHELL=zsh

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
    # Ctrl-C during the run `cd` started (chpwd) would otherwise be followed by precmd's
    # run for the new prompt: the flag left set says so, and that prompt comes without
    # asking gpuenv. The next command's prompt asks again.
    if [[ -n "${_gpuenv_interrupted-}" ]]; then
        _gpuenv_interrupted=
        return 0
    fi
    # Nothing changed: no process at all (builtins only until here).
    _gpuenv_fresh && return 0
    _gpuenv_back && return 0
    # Ctrl-C while gpuenv works stops it and gives the prompt back; a run that did not
    # finish changes nothing.
    local code st
    _gpuenv_interrupted=1
    code="$(@PROMPT@ hook-env --shell zsh)"
    st=$?
    # Killed by a signal: the flag stays for the prompt that follows.
    (( st > 128 )) && return 0
    _gpuenv_interrupted=
    (( st == 0 )) || return 0
    # Applying it is not interruptible half-way; localtraps puts the user's INT trap (or
    # TRAPINT) back.
    setopt localoptions localtraps
    trap -- '' SIGINT
    eval "$code"
}

# A typed command ends the prompt an interrupted run belonged to.
_gpuenv_typed() { _gpuenv_interrupted= }

# `gpuenv use` changes this shell; everything else is the binary.
gpuenv() {
    if [[ "${1:-}" == use ]]; then
        shift
        local code
        code="$(@GPUENV@ use --print --shell zsh "$@")" || return $?
        eval "$code"
    else
        @GPUENV@ "$@"
    fi
}

autoload -Uz add-zsh-hook
add-zsh-hook precmd _gpuenv_hook
add-zsh-hook chpwd _gpuenv_hook
add-zsh-hook preexec _gpuenv_typed
