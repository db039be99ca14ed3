# gpuenv shell integration for fish: gpuenv hook fish | source (in config.fish)
set -gx GPUENV_SHELL fish

# nvcc, hipcc and every other toolchain tool resolve through the shims first.
if not contains -- @SHIMS@ $PATH
    set -gx PATH @SHIMS@ $PATH
end

# Redefined by every hook-env run: true while nothing that run depended on has changed.
function __gpuenv_fresh
    return 1
end
# Redefined by every hook-env run that moved the shell: back in the directory before it,
# with nothing changed since, puts that directory's environment back (builtins only).
function __gpuenv_back
    return 1
end

function __gpuenv_hook --on-event fish_prompt --on-variable PWD
    # Ctrl-C during the run `cd` started (PWD) would otherwise be followed by the prompt's
    # run: the flag left set says so, and that prompt comes without asking gpuenv. The
    # next command's prompt asks again.
    if set -q __gpuenv_interrupted
        set -e __gpuenv_interrupted
        return
    end
    # Nothing changed: no process at all (builtins only until here).
    __gpuenv_fresh; and return
    __gpuenv_back; and return
    # Ctrl-C while gpuenv works stops it and gives the prompt back; a run that did not
    # finish changes nothing.
    set -g __gpuenv_interrupted 1
    set -l code (@PROMPT@ hook-env --shell fish | string collect)
    set -l st $pipestatus[1]
    # Killed by a signal: the flag stays for the prompt that follows.
    test $st -gt 128; and return
    set -e __gpuenv_interrupted
    test $st -eq 0; or return
    printf '%s\n' $code | source
end

# A typed command ends the prompt an interrupted run belonged to.
function __gpuenv_typed --on-event fish_preexec
    set -e __gpuenv_interrupted
end

# `gpuenv use` changes this shell; everything else is the binary.
function gpuenv
    if test "$argv[1]" = use
        set -l code (@GPUENV@ use --print --shell fish $argv[2..-1] | string collect)
        set -l rc $pipestatus[1]
        test $rc -eq 0; or return $rc
        echo $code | source
    else
        @GPUENV@ $argv
    end
end
