//go:build tools

// Package crds only names what the CRDs come from, so go mod tidy keeps
// those modules; nothing here is built.
package crds

import (
	_ "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	_ "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	_ "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)
