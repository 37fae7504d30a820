// Bash completion that works without the bash-completion package.

package cli

// Bash completion without the bash-completion package: cobra's script
// calls _get_comp_words_by_ref and _filedir from that package; when the
// shell has neither, minimal versions are defined first.

import (
	"io"

	"github.com/spf13/cobra"
)

// bashShim defines what cobra's bash script needs from bash-completion
// when that package is not loaded. Words are split as bash splits them
// (bash-completion would join "--state=Queued" back together; here
// "--state Queued" completes).
const bashShim = `# Minimal stand-ins for the bash-completion package, if it is not loaded.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    while [[ $1 == -* ]]; do [[ $1 == -n ]] && shift; shift; done
    local v
    for v in "$@"; do
        case $v in
        cur) cur=${COMP_WORDS[COMP_CWORD]} ;;
        prev) prev=${COMP_WORDS[COMP_CWORD-1]} ;;
        words) words=("${COMP_WORDS[@]}") ;;
        cword) cword=$COMP_CWORD ;;
        esac
    done
}
fi
if ! declare -F _filedir >/dev/null 2>&1; then
_filedir() {
    local IFS=$'\n'
    if [[ $1 == -d ]]; then
        COMPREPLY=($(compgen -d -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
fi
`

// FixBashCompletion makes `completion bash` print the stand-ins before
// cobra's script, so that completion works in a shell without the
// bash-completion package.
func FixBashCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		for _, sh := range c.Commands() {
			if sh.Name() != "bash" || sh.RunE == nil {
				continue
			}
			gen := sh.RunE
			sh.RunE = func(cmd *cobra.Command, args []string) error {
				io.WriteString(cmd.OutOrStdout(), bashShim)
				return gen(cmd, args)
			}
		}
	}
}
