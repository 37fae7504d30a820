// Finding the dotted key of a Config field, for the messages of validation.

package config

import (
	"fmt"
	"reflect"
)

// A key's name is spelled once, in the toml tag of its raw struct field
// (load.go). Parsing converts by those tags, and validation finds the key
// of a Config field from the field's address, by walking the raw structs
// beside the Config: raw and Config fields share their Go names.

// fieldRef identifies one field of a Config: its address and type (a
// struct and its first field share an address).
type fieldRef struct {
	addr uintptr
	typ  reflect.Type
}

// keyIndex maps the fields of one Config to their dotted keys (indexed
// for arrays of tables: "instance_type[1].ram").
type keyIndex map[fieldRef]string

// indexKeys builds the key index of c. c must not move or grow its slices
// while the index is in use.
func indexKeys(c *Config) keyIndex {
	ki := keyIndex{}
	ki.add("", rawFileType, reflect.ValueOf(c).Elem())
	return ki
}

func (ki keyIndex) add(path string, raw reflect.Type, dst reflect.Value) {
	for i := 0; i < raw.NumField(); i++ {
		f := raw.Field(i)
		df := dst.FieldByName(f.Name)
		if !df.IsValid() {
			panic(fmt.Sprintf("config: raw field %s has no counterpart in %s", f.Name, dst.Type()))
		}
		key := joinKey(path, tagName(f))
		ki[fieldRef{df.Addr().Pointer(), df.Type()}] = key
		switch {
		case f.Type == valueType:
		case f.Type.Kind() == reflect.Struct:
			ki.add(key, f.Type, df)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			for j := 0; j < df.Len(); j++ {
				ki.add(fmt.Sprintf("%s[%d]", key, j), f.Type.Elem(), df.Index(j))
			}
		}
	}
}

// of returns the key of the Config field ptr points to.
func (ki keyIndex) of(ptr any) string {
	v := reflect.ValueOf(ptr)
	k, ok := ki[fieldRef{v.Pointer(), v.Type().Elem()}]
	if !ok {
		panic(fmt.Sprintf("config: %T is not a field of the Config being validated", ptr))
	}
	return k
}
