package sqlplan

import (
	"errors"

	"gostachio/plan"
)

func planSQL(name, text string, tables []plan.TableStats, opts Options) (*plan.Plan, error) {
	return nil, errors.New("sqlplan: planner not built yet")
}
