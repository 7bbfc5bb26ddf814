module github.com/agentsmithd/agentsmithd/deploy/helm

go 1.26.8

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	helm.sh/helm/v3 v3.22.0 // indirect
	k8s.io/api v0.37.2 // indirect
	k8s.io/client-go v0.37.2 // indirect
	sigs.k8s.io/kustomize/api v0.21.2 // indirect
	sigs.k8s.io/kustomize/kyaml v0.21.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
