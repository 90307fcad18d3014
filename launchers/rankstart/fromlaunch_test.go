package rankstart

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/site"
)

func siteOf(t *testing.T, text string) *site.Site {
	t.Helper()
	s, err := site.Parse([]byte(text), "site.yaml")
	assert.NilError(t, err)
	return s
}

// What launch.Options fix for every MPI step, rendered by each starter:
// the site's binding, MCA pairs and arguments before --mpi-arg's, HCOLL
// off for Open MPI unless the site leaves it on; srun takes the MCA
// settings and HCOLL's switch as the environment and the binding as
// --cpu-bind.
func TestFromLaunch(t *testing.T) {
	s := plan.Step{Name: "all_gather", Argv: []string{"all_gather_perf"}, Procs: 8, ProcsPerNode: 4, MPI: true}
	seed001 := siteOf(t, "site: a4x\nmpi:\n  bind_to: none\n  mca: {btl_tcp_if_include: eth0, btl: \"self,tcp\"}\n  args: [--mca, plm_rsh_no_tree_spawn, \"1\"]\n")
	for _, c := range []struct {
		name   string
		o      launch.Options
		want   string // in mpirun's line
		not    string
		srun   []string
		srunAs string // in srun's line
	}{
		{name: "no site: HCOLL off", o: launch.Options{}, want: "-np 8 --map-by ppr:4:node -mca coll_hcoll_enable 0 all_gather_perf",
			srun: []string{"OMPI_MCA_coll_hcoll_enable=0"}},
		{name: "seed 001's site", o: launch.Options{Site: seed001, MPIArgs: []string{"--mca", "btl_base_verbose", "0"}},
			want: "--bind-to none --mca btl self,tcp --mca btl_tcp_if_include eth0 -mca coll_hcoll_enable 0 --mca plm_rsh_no_tree_spawn 1 --mca btl_base_verbose 0 all_gather_perf",
			srun: []string{"OMPI_MCA_btl=self,tcp", "OMPI_MCA_btl_tcp_if_include=eth0", "OMPI_MCA_coll_hcoll_enable=0"}, srunAs: "--cpu-bind=none"},
		{name: "hcoll left on", o: launch.Options{Site: siteOf(t, "site: x\nmpi: {hcoll: true, bind_to: numa}\n")}, want: "--bind-to numa all_gather_perf", not: "coll_hcoll_enable",
			srunAs: "--cpu-bind=ldoms"},
		{name: "HPC-X turns HCOLL off whatever the site says", o: launch.Options{MPIFlavor: "hpcx", Site: siteOf(t, "site: x\nmpi: {hcoll: true}\n")}, want: "-mca coll_hcoll_enable 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, base, err := FromLaunch(c.o)
			assert.NilError(t, err)
			argv, err := st.Argv(s, Merge(base, Options{Environ: []string{}}))
			assert.NilError(t, err)
			line := ShellJoin(argv)
			assert.Assert(t, strings.Contains(line, c.want), line)
			if c.not != "" {
				assert.Assert(t, !strings.Contains(line, c.not), line)
			}
			sr, _ := Lookup(FlavorSrun)
			o := Merge(base, Options{PMI: "pmix"})
			assert.DeepEqual(t, sr.Env(o), c.srun)
			sargv, err := sr.Argv(s, o)
			assert.NilError(t, err)
			if c.srunAs != "" {
				assert.Assert(t, strings.Contains(ShellJoin(sargv), c.srunAs), ShellJoin(sargv))
			}
		})
	}
	// The site's flavor when --mpi-flavor is not given; its errors name
	// the field.
	st, _, err := FromLaunch(launch.Options{Site: siteOf(t, "site: x\nmpi: {flavor: mpich}\n")})
	assert.NilError(t, err)
	assert.Equal(t, st.Name(), FlavorMPICH)
	st, _, err = FromLaunch(launch.Options{MPIFlavor: "openmpi", Site: siteOf(t, "site: x\nmpi: {flavor: mpich}\n")})
	assert.NilError(t, err)
	assert.Equal(t, st.Name(), FlavorOpenMPI)
	_, _, err = FromLaunch(launch.Options{Site: siteOf(t, "site: x\nmpi: {flavor: lam}\n")})
	assert.ErrorContains(t, err, `site.yaml: field mpi.flavor: --mpi-flavor: unknown MPI flavor "lam"`)
	_, _, err = FromLaunch(launch.Options{Site: siteOf(t, "site: x\nmpi: {flavor: mpich, mca: {btl: self}}\n")})
	assert.ErrorContains(t, err, "site.yaml: field mpi.mca: btl is an Open MPI MCA parameter, and the ranks start with mpich")
	// A binding srun has no word for is refused, named.
	sr, _ := Lookup(FlavorSrun)
	_, err = sr.Argv(s, Options{BindTo: "l3cache"})
	assert.ErrorContains(t, err, `binding "l3cache" has no srun --cpu-bind equivalent`)
}
