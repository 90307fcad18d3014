package redact

import "reflect"

// Value returns a deep copy of v with every string in it masked (struct
// fields, map keys and values, slices, pointers, interfaces; []byte as
// bytes), so a run's results can be masked whole before they are written
// in any format: a message quoting a log line, a diagnostic, a command, a
// label. v itself is not changed (other goroutines may be reading it).
// Numbers, times and unexported fields are copied as they are.
func Value[T any](r *Redactor, v T) T {
	rv := reflect.ValueOf(&v).Elem()
	out := r.value(rv)
	return out.Interface().(T)
}

func (r *Redactor) value(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		m := r.String(s)
		if m == s {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.SetString(m)
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(r.value(v.Elem()))
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(r.value(v.Elem()))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range v.NumField() {
			if f := n.Field(i); f.CanSet() {
				f.Set(r.value(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			n := reflect.New(v.Type()).Elem()
			n.SetBytes(r.Bytes(v.Bytes()))
			return n
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(r.value(v.Index(i)))
		}
		return n
	case reflect.Array:
		n := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			n.Index(i).Set(r.value(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			n.SetMapIndex(r.value(it.Key()), r.value(it.Value()))
		}
		return n
	}
	return v
}
