// Connecting: the URL's shape checked, and the server's answers turned
// into errors that say what to do (never the password).

package pgstore

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CheckURL reports whether url is a PostgreSQL connection URL this store
// can use (check-config): its shape only; nothing is contacted.
func CheckURL(url string) error {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return errors.New("want a URL starting postgres:// (e.g. postgres://dispatch@db.example:5432/dispatch)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("not a PostgreSQL URL: %s", redact(err.Error(), url))
	}
	if cfg.ConnConfig.Database == "" {
		return errors.New("the URL names no database: add /<database> after the host")
	}
	return nil
}

// URLHasPassword reports whether the URL itself carries a password (in its
// user part or as a password parameter), which makes the file it is
// written in a secret. A password from ~/.pgpass or $PGPASSWORD is not in
// the URL and does not count.
func URLHasPassword(u string) bool {
	p, err := neturl.Parse(u)
	if err != nil {
		return true // not a URL CheckURL passes; when in doubt, a secret

	}
	if _, ok := p.User.Password(); ok {
		return true
	}
	return p.Query().Get("password") != ""
}

// connect opens a pool on url and checks that the server answers.
func connect(ctx context.Context, url string, idleInTx time.Duration) (*pgxpool.Pool, error) {
	if err := CheckURL(url); err != nil {
		return nil, fmt.Errorf("[store] url: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("[store] url: %s", redact(err.Error(), url))
	}
	if idleInTx > 0 {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleInTx.Milliseconds(), 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("[store] url: %s", redact(err.Error(), url))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, explain(err, cfg.ConnConfig.Config, url)
	}
	return pool, nil
}

// ConnectError is a failure to connect, said for an operator.
type ConnectError struct {
	Msg string
	Err error // the driver's error
}

func (e *ConnectError) Error() string { return e.Msg }
func (e *ConnectError) Unwrap() error { return e.Err }

// explain turns a failed first contact into what to do.
func explain(err error, cfg pgconn.Config, url string) error {
	where := fmt.Sprintf("PostgreSQL at %s:%d (database %q, user %q)", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "28P01", "28000":
			return &ConnectError{Msg: where + " refused the credentials: check the user and password in [store] url (or url_file)", Err: err}
		case "3D000":
			return &ConnectError{Msg: where + ": the database does not exist: create it (createdb) or fix [store] url", Err: err}
		}
		return &ConnectError{Msg: where + ": " + pg.Message + " (" + pg.Code + ")", Err: err}
	}
	return &ConnectError{Msg: "cannot reach " + where + ": " + redact(rootCause(err), url) + "; check that the server is running and [store] url", Err: err}
}

// rootCause is the innermost error's text.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// redact removes url's password from msg.
func redact(msg, url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
	}
	return msg
}
