package controller

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"hora/api"
)

var backupSeq atomic.Int64

// hStats answers `hora stats`: anyone may read the numbers.
// hReconfigure is scontrol reconfigure: horad re-reads its configuration
// file as on SIGHUP. Only root and the operators may, as only Slurm's
// administrators may; a file with errors is refused with its problems, and
// the running configuration stays.
func (c *Controller) hReconfigure(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	if !c.operators[who.UID] {
		return nil, &api.Error{Message: msgInvalidUser, Code: api.CodeAccessDenied}
	}
	if c.reconfigure == nil {
		return nil, &api.Error{Message: "this horad cannot re-read its configuration", Code: api.CodeInternal}
	}
	path, err := c.reconfigure(ctx)
	if err != nil {
		return nil, &api.Error{Message: err.Error(), Code: api.CodeBadRequest}
	}
	c.log.Info("reconfigured", "uid", who.UID, "config", path)
	return &api.ReconfigureResponse{Config: path}, nil
}

func (c *Controller) hStats(ctx context.Context, who *Caller, r *http.Request) (any, error) {
	s := c.Stats()
	out := &api.StatsResponse{Version: Version, Pending: s.Pending, Running: s.Running, Suspended: s.Suspended,
		Nodes: s.Nodes, NodesDown: s.NodesDown, LastPassSeconds: s.LastPassTook.Seconds(), Started: c.started.Unix()}
	if !s.LastPass.IsZero() {
		out.LastPass = s.LastPass.Unix()
	}
	if !s.LastReload.IsZero() {
		out.LastReload = s.LastReload.Unix()
	}
	return out, nil
}

// hBackup streams a consistent copy of the database (store.Backup, VACUUM
// INTO) to root or an operator: it holds every user's scripts. The copy is
// made in the state directory, the one place horad.service may write, and
// removed once sent; the client writes it where its caller may.
func (c *Controller) hBackup(w http.ResponseWriter, r *http.Request) {
	who, err := callerFrom(r.Context())
	if err != nil || !c.operators[who.UID] {
		writeJSON(w, http.StatusForbidden, &api.Error{Message: "Access/permission denied: a backup holds every job's script; only root and operators may take one",
			Code: api.CodeAccessDenied})
		return
	}
	tmp := filepath.Join(c.cfg.StateDir, ".backup-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(backupSeq.Add(1), 10)+".db")
	defer os.Remove(tmp)
	if err := c.st.Backup(r.Context(), tmp); err != nil {
		c.log.Error("backup failed", "uid", who.UID, "err", err)
		writeJSON(w, http.StatusInternalServerError, &api.Error{Message: err.Error(), Code: api.CodeInternal})
		return
	}
	f, err := os.Open(tmp)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, &api.Error{Message: err.Error(), Code: api.CodeInternal})
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, &api.Error{Message: err.Error(), Code: api.CodeInternal})
		return
	}
	w.Header().Set("Content-Type", "application/vnd.sqlite3")
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if _, err := f.WriteTo(w); err != nil {
		c.log.Warn("backup not fully sent", "uid", who.UID, "err", err)
		return
	}
	c.log.Info("backup taken", "uid", who.UID, "bytes", fi.Size())
}
