package unwind

// ForgetRows empties the module's rows, for benchmarks of a first unwind.
func (m *Module) ForgetRows() {
	m.cache.rows.Clear()
	m.cache.n.Store(0)
}

// MappingBias is mappingBias, for the tests.
var MappingBias = mappingBias
