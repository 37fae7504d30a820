// Finding, reading and parsing a config file: the steps around its one decode.

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"dispatch-tui/engine/secretfile"
	"dispatch-tui/engine/store/pgstore"
)

// Find returns the config file to use when --config is absent (docs/design.md §7.1):
// ./dispatch-tui.toml, then $XDG_CONFIG_HOME/dispatch-tui/config.toml
// ($HOME/.config/dispatch-tui/config.toml when XDG_CONFIG_HOME is unset).
// It returns "" and no error when neither exists.
func Find() (path string, err error) {
	candidates := []string{"dispatch-tui.toml"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		candidates = append(candidates, filepath.Join(x, "dispatch-tui", "config.toml"))
	} else if h, err := os.UserHomeDir(); err == nil && h != "" {
		candidates = append(candidates, filepath.Join(h, ".config", "dispatch-tui", "config.toml"))
	}
	for _, p := range candidates {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return "", fmt.Errorf("config file %s is a directory", p)
		case err == nil:
			return p, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", err
		}
	}
	return "", nil
}

// FindAndLoad loads the file named by --config when explicit is not "";
// otherwise the file Find finds; otherwise it returns Default().
func FindAndLoad(explicit string) (*Config, error) {
	path := explicit
	if path == "" {
		var err error
		if path, err = Find(); err != nil {
			return nil, err
		}
		if path == "" {
			return Default(), nil
		}
	}
	return Load(path)
}

// Load reads and parses the config file at path. A file that holds a
// secret (token, a token of [[dispatcher.tokens]], or a store.url with a
// password) must pass secretfile.Check: this user's or root's, and
// private.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if c.holdsSecret != "" {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if err := secretfile.Check(path, fi); err != nil {
			return nil, Errors{&Error{File: path, Msg: "holds " + c.holdsSecret + ": " + err.Error()}}
		}
	}
	return c, nil
}

// Parse parses a config file's contents over the built-in defaults and
// validates the result. path is used in error messages, to resolve relative
// file paths in the config, and is recorded in Config.Path; it may be "".
//
// On failure the error is an Errors value holding every problem found, each
// tied to its line.
func Parse(data []byte, path string) (*Config, error) {
	file := path
	if file == "" {
		file = "<config>"
	}
	src := string(data)
	// The one decode; the locator's scan of the text is the one other
	// pass, for line numbers (the decoder keeps key positions private).
	var doc map[string]any
	if _, err := toml.Decode(src, &doc); err != nil {
		return nil, Errors{syntaxError(file, err)}
	}
	p := &parser{file: file, loc: locate(src), failed: map[string]bool{}}
	if path != "" {
		p.dir = filepath.Dir(path)
	}
	c := defaults()
	c.Path = path
	p.walk(c, doc, nil, "", 0)
	if p.misshapen {
		return nil, p.result()
	}
	p.finish(c)
	for _, e := range c.validate() {
		if p.failed[e.Key] {
			continue
		}
		e.File = file
		if n, ok := p.loc.byPath[e.Key]; ok {
			e.Line = n
		} else if e.lineKey != "" {
			e.Line = p.loc.line(e.lineKey)
		} else {
			e.Line = p.loc.line(e.Key)
		}
		p.errs = append(p.errs, e)
	}
	if len(p.errs) > 0 {
		return nil, p.result()
	}
	sortInstanceTypes(c.InstanceTypes)
	return c, nil
}

// secretHeld names the secret the file's own keys hold, before token and
// URL files are read: a token, or a password in store.url.
func secretHeld(c *Config) string {
	if c.Dispatcher.Token != "" {
		return "a token"
	}
	for _, t := range c.Dispatcher.Tokens {
		if t.Token != "" {
			return "a token"
		}
	}
	if pgstore.URLHasPassword(c.Store.URL) {
		return "the store URL's password (or move it to url_file or ~/.pgpass)"
	}
	return ""
}

// finish does what joins keys after decoding: old driver names renamed
// (with a warning), the defaults that depend on other keys, and token files
// read into their tokens.
func (p *parser) finish(c *Config) {
	for _, w := range c.renameOldDrivers() {
		w.File, w.Line = p.file, p.loc.line(w.Key)
		c.Warnings = append(c.Warnings, w)
	}
	c.holdsSecret = secretHeld(c)
	resolveStateDir(&c.Dispatcher)
	p.readTokens(c)
	p.resolveStoreURL(&c.Store)
	resolveHA(c)
	withPorts(c)
	p.providerTypes(c)
	p.mergeHostLabels(c)
}

func syntaxError(file string, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: file, Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message}
	}
	return &Error{File: file, Msg: "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
}

// localPath resolves a local file path from the config: "~/" is the home
// directory, and a relative path is relative to the config file's directory.
func localPath(dir, s string) string {
	if s == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil && h != "" {
			return filepath.Join(h, rest)
		}
	}
	if filepath.IsAbs(s) || dir == "" {
		return s
	}
	return filepath.Join(dir, s)
}
