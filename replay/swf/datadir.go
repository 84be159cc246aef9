package swf

import (
	"os"
	"path/filepath"
)

// SharedDataDir is where the project's reference logs live: $HORA_SWF_DIR
// if set, else shared/data/swf beside the checkout (the layout developers
// and CI have: the repository and shared/ side by side). It looks upward
// from the working directory for the module root, so tests and tools find
// it from any package directory.
func SharedDataDir() string {
	if d := os.Getenv("HORA_SWF_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data", "swf")
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data", "swf")
		}
		if filepath.Dir(d) == d {
			return filepath.Join("..", "shared", "data", "swf")
		}
	}
}
