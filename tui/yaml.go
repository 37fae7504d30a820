// The YAML view of the object under the cursor.

package tui

// The YAML view (`y`, as in k9s): the object under the cursor, or the one
// whose details are shown, as the API serves it, refreshed with the
// snapshot.

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/termsafe"
)

// openYaml shows the object id of view v as YAML; back is where esc
// returns.
// A container's record is read first when the snapshot has none.
func (m *Model) openYaml(v viewID, id string, back mode) tea.Cmd {
	m.yamlView, m.yamlID, m.pg.back = v, id, back
	m.openScreen(modeYaml)
	return m.fetchFull()
}

// yamlObject returns the snapshot's object for the YAML view (nil when it
// is gone).
func (m *Model) yamlObject() any {
	if m.snap == nil {
		return nil
	}
	switch m.yamlView {
	case vInstances:
		for i := range m.snap.Instances {
			if instanceID(&m.snap.Instances[i], i) == m.yamlID {
				return &m.snap.Instances[i]
			}
		}
	case vContainers:
		if c := m.container(m.yamlID); c != nil {
			return c
		}
	case vTypes:
		for i := range m.snap.Types {
			if m.snap.Types[i].Name == m.yamlID {
				return &m.snap.Types[i]
			}
		}
	case vEvents:
		if e, ok := m.eventBySeq(m.yamlID); ok {
			return &e
		}
	}
	return nil
}

// yamlLines renders the YAML view's text, escaped (names, commands and
// reasons come from users and programs).
func (m *Model) yamlLines() []string {
	kind := strings.TrimSuffix(viewNames[m.yamlView], "s")
	head := "# " + kind + " " + m.yamlID
	obj := m.yamlObject()
	if obj == nil {
		if why := m.fullMissing(m.yamlID); m.yamlView == vContainers && why != "" {
			return []string{head, "# " + why}
		}
		return []string{head, "# gone: no longer in the snapshot"}
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		return []string{head, "# cannot render it as YAML: " + err.Error()}
	}
	return append([]string{head}, termsafe.Lines(strings.TrimRight(string(b), "\n"))...)
}
