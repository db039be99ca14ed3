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

function __gpuenv_hook --on-event fish_prompt --on-variable PWD
    # Nothing changed: no process at all (builtins only until here).
    __gpuenv_fresh; and return
    # Ctrl-C while gpuenv works stops it and gives the prompt back; a run that did not
    # finish changes nothing.
    set -l code (@GPUENV@ hook-env --shell fish | string collect)
    test $pipestatus[1] -eq 0; or return
    printf '%s\n' $code | source
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
