package rankstart

import (
	"fmt"

	"github.com/gpuaccept/gpuaccept/framework/launch"
)

// FromLaunch is what launch.Options fix for every MPI step of a run, the
// same under every launcher: the starter (--mpi-flavor, else the site's
// mpi.flavor, else Open MPI's mpirun) and the options every step's
// command line starts from (the site's mpi.args then --mpi-arg, its
// bind_to and mca, and HCOLL off for Open MPI and HPC-X unless the site
// says hcoll: true). A launcher fills in the rest per step (hosts, root,
// environment, remote shell). The error names the flag or field.
func FromLaunch(o launch.Options) (Starter, Options, error) {
	flavor := o.MPIFlavor
	var base Options
	if s := o.Site; s != nil && s.MPI != nil {
		if flavor == "" {
			flavor = s.MPI.Flavor
		}
		base.ExtraArgs = append(base.ExtraArgs, s.MPI.Args...)
		base.BindTo = s.MPI.BindTo
		base.MCA = s.MCA()
	}
	st, err := ForMPIFlavor(flavor)
	if err != nil {
		if o.MPIFlavor == "" && flavor != "" {
			return nil, Options{}, &siteFlavorError{file: o.Site.File, err: err}
		}
		return nil, Options{}, err
	}
	if st.Family() == FamilyMPICH && len(base.MCA) > 0 {
		return nil, Options{}, fmt.Errorf("%s: field mpi.mca: %s is an Open MPI MCA parameter, and the ranks start with %s, which has none (give Hydra's own options in mpi.args)", o.Site.File, base.MCA[0][0], st.Name())
	}
	base.ExtraArgs = append(base.ExtraArgs, o.MPIArgs...)
	hcoll := o.Site != nil && o.Site.MPI != nil && o.Site.MPI.HCOLL
	base.DisableHCOLL = st.Family() == FamilyOpenMPI && !hcoll
	return st, base, nil
}

// Merge returns base with the step's own settings of o laid over it:
// hosts, root, environment, remote shell, work folder, job name and PMI
// from o; extra arguments base's then o's.
func Merge(base, o Options) Options {
	out := o
	out.ExtraArgs = append(append([]string(nil), base.ExtraArgs...), o.ExtraArgs...)
	if out.BindTo == "" {
		out.BindTo = base.BindTo
	}
	out.MCA = append(append([][2]string(nil), base.MCA...), o.MCA...)
	out.DisableHCOLL = o.DisableHCOLL || base.DisableHCOLL
	return out
}

type siteFlavorError struct {
	file string
	err  error
}

func (e *siteFlavorError) Error() string { return e.file + ": field mpi.flavor: " + e.err.Error() }
func (e *siteFlavorError) Unwrap() error { return e.err }
