package datafile

import "testing"

func TestPlanID(t *testing.T) {
	base := PlanID(testPlan(FuncCounting))
	tests := []struct {
		name   string
		method Method
		edit   func(p *Plan)
		same   bool
	}{
		{"equal plan", FuncCounting, func(*Plan) {}, true},
		{"coverage of the same sites", FuncCoverage, func(*Plan) {}, true},
		{"sampling of the same functions", FuncSampling, func(p *Plan) { p.Lines = nil }, false},
		{"timing of the same sites", FuncTiming, func(*Plan) {}, false},
		{"entry moved", FuncCounting, func(p *Plan) { p.Funcs[1].Entry += 4 }, false},
		{"functions swapped", FuncCounting, func(p *Plan) { p.Funcs[0], p.Funcs[1] = p.Funcs[1], p.Funcs[0] }, false},
		{"function dropped", FuncCounting, func(p *Plan) { p.Funcs = p.Funcs[:3] }, false},
		{"function renamed", FuncCounting, func(p *Plan) { p.Funcs[3].Name = "bar" }, false},
		{"function in another module", FuncCounting, func(p *Plan) { p.Funcs[3].Module = 0 }, false},
		{"program relinked", FuncCounting, func(p *Plan) { p.Modules[0].BuildID[0]++ }, false},
		{"program touched", FuncCounting, func(p *Plan) { p.Modules[0].ModTime++ }, false},
		{"program grown", FuncCounting, func(p *Plan) { p.Modules[0].Size++ }, false},
		{"library not PIE", FuncCounting, func(p *Plan) { p.Modules[1].PIE = false }, false},
		{"library link base", FuncCounting, func(p *Plan) { p.Modules[1].LinkBase = 0 }, false},
		{"other arch", FuncCounting, func(p *Plan) { p.Modules[1].Arch = "arm64" }, false},
		{"program moved", FuncCounting, func(p *Plan) { p.Modules[0].Path = "/tmp/prog" }, true},
		{"other sources and declarations", FuncCounting, func(p *Plan) {
			p.Funcs[0].Source, p.Funcs[0].File, p.Funcs[0].Line = "x.o", "x.c", 99
			p.Modules[0].CompDirs = nil
		}, true},
		{"other options", FuncCounting, func(p *Plan) {
			p.StartFunc, p.StartIndex = "main", 0
			p.Attribution, p.StackDepth, p.Calibration = false, 3, 50
		}, true},
		// Name and file name boundaries must not shift: "ab"+"c" is not
		// "a"+"bc".
		{"name boundary", FuncCounting, func(p *Plan) {
			p.Modules[0].Name, p.Modules[0].Arch = "progamd", "64"
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan(tt.method)
			tt.edit(p)
			if got := PlanID(p); (got == base) != tt.same {
				t.Errorf("PlanID %s, base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

func TestPlanIDLines(t *testing.T) {
	base := PlanID(testPlan(LineCounting))
	tests := []struct {
		name   string
		method Method
		edit   func(p *Plan)
		same   bool
	}{
		{"line coverage", LineCoverage, func(p *Plan) { p.Branches = nil }, true},
		{"branches", LineCoverage, func(*Plan) {}, false},
		{"branch moved", LineCoverage, func(p *Plan) { p.Branches = p.Branches[:1] }, false},
		{"address moved", LineCounting, func(p *Plan) { p.Lines[1].Addrs[1]++ }, false},
		{"line renumbered", LineCounting, func(p *Plan) { p.Lines[0].Line++ }, false},
		{"file renamed", LineCounting, func(p *Plan) { p.Modules[0].Files[1] = "other.c" }, false},
		// The file list is reordered but every line names the same file.
		{"files reordered", LineCounting, func(p *Plan) {
			f := p.Modules[0].Files
			f[0], f[1] = f[1], f[0]
			for i := range p.Lines {
				if p.Lines[i].Module == 0 {
					p.Lines[i].File = 1 - p.Lines[i].File
				}
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan(tt.method)
			tt.edit(p)
			if got := PlanID(p); (got == base) != tt.same {
				t.Errorf("PlanID %s, base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

// TestPlanIDInvalid checks that PlanID accepts a plan whose indexes are out
// of range (Validate calls it last, but callers may not).
func TestPlanIDInvalid(t *testing.T) {
	p := testPlan(LineCounting)
	p.Lines[0].Module, p.Lines[1].File = 7, -1
	if PlanID(p) == p.ID {
		t.Error("PlanID did not change with the lines' indexes")
	}
}
