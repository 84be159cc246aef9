package replay

import (
	"hora/config"
	"hora/scheduler"
)

func init() {
	loadConfig = func(path string) (*scheduler.Config, error) {
		cf, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		sc := cf.Scheduler()
		return &sc, nil
	}
}
