package report

import "github.com/dynosim/dynosim-web/core/report/schema"

// Deployment is schema.Deployment: the section's shape lives in the schema.
type Deployment = schema.Deployment

// PoolDeployment is schema.PoolDeployment: the section's shape lives in the schema.
type PoolDeployment = schema.PoolDeployment

// SLAInfo is schema.SLAInfo: the section's shape lives in the schema.
type SLAInfo = schema.SLAInfo

func (s SLA) info() *SLAInfo {
	if s == (SLA{}) {
		return nil
	}
	pos := func(v float64) *float64 {
		if v > 0 {
			return &v
		}
		return nil
	}
	return &SLAInfo{TTFTMs: pos(s.TTFTMs), ITLMs: pos(s.ITLMs), E2EMs: pos(s.E2EMs)}
}
