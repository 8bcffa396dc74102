// Command karpenter-kwok is Karpenter's KWOK provider, as sigs.k8s.io/karpenter/kwok builds it, with one
// addition: each instance type carries the devices its nodes will publish (InstanceType.DynamicResources),
// so that Karpenter's DRA allocator can place claim-only pods. Karpenter v1.15.0 reads templates from the
// cloud provider alone: neither the KWOK provider's instance-types file (kwok/cloudprovider/helpers.go,
// InstanceTypeOptions) nor NodeOverlay has a field for them.
//
// FAKEGPU_DYNAMIC_RESOURCES_FILE names the JSON of `fakegpu export karpenter -o json`
// (src/tools/karpenter/templates.ts): per instance type, the slices a node of it will publish, with the
// type's name as pool name, and the devices that share a PCIe root.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"unique"

	"github.com/samber/lo"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

type templateFile struct {
	InstanceTypes []struct {
		InstanceType           string `json:"instanceType"`
		ResourceSliceTemplates []struct {
			Driver string `json:"driver"`
			Pool   struct {
				Name string `json:"name"`
			} `json:"pool"`
			Devices        []resourcev1.Device     `json:"devices"`
			SharedCounters []resourcev1.CounterSet `json:"sharedCounters"`
		} `json:"resourceSliceTemplates"`
		AttributeBindings []struct {
			Attribute resourcev1.QualifiedName `json:"attribute"`
			Devices   []struct {
				Driver string `json:"driver"`
				Pool   string `json:"pool"`
				Device string `json:"device"`
			} `json:"devices"`
		} `json:"attributeBindings"`
	} `json:"instanceTypes"`
}

// withDynamicResources sets each named instance type's templates; a type the file names and the
// provider lacks is an error, since its devices would silently never be offered.
func withDynamicResources(types []*cloudprovider.InstanceType, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var file templateFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	byName := lo.KeyBy(types, func(it *cloudprovider.InstanceType) string { return it.Name })
	for _, spec := range file.InstanceTypes {
		name := spec.InstanceType
		it, ok := byName[name]
		if !ok {
			return fmt.Errorf("%s: instance type %q is not among the provider's instance types", path, name)
		}
		dr := cloudprovider.DynamicResources{}
		for _, t := range spec.ResourceSliceTemplates {
			tpl := &cloudprovider.ResourceSliceTemplate{
				Driver:         unique.Make(t.Driver),
				Pool:           cloudprovider.ResourcePool{Name: unique.Make(t.Pool.Name)},
				SharedCounters: t.SharedCounters,
			}
			for _, d := range t.Devices {
				tpl.Devices = append(tpl.Devices, cloudprovider.Device{
					Name:                     unique.Make(d.Name),
					Attributes:               d.Attributes,
					Capacity:                 d.Capacity,
					AllowMultipleAllocations: lo.FromPtr(d.AllowMultipleAllocations),
					ConsumesCounters:         d.ConsumesCounters,
				})
			}
			dr.ResourceSliceTemplates = append(dr.ResourceSliceTemplates, tpl)
		}
		for _, b := range spec.AttributeBindings {
			ids := make([]cloudprovider.DeviceID, 0, len(b.Devices))
			for _, d := range b.Devices {
				ids = append(ids, cloudprovider.DeviceID{
					Driver: unique.Make(d.Driver),
					Pool:   unique.Make(d.Pool),
					Device: unique.Make(d.Device),
				})
			}
			dr.AttributeBindings = append(dr.AttributeBindings, &cloudprovider.AttributeBinding{Devices: ids, Attribute: b.Attribute})
		}
		it.DynamicResources = dr
	}
	return nil
}

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
		os.Exit(1)
	}
	if path := os.Getenv("FAKEGPU_DYNAMIC_RESOURCES_FILE"); path != "" {
		if err := withDynamicResources(instanceTypes, path); err != nil {
			log.FromContext(ctx).Error(err, "failed reading the instance types' dynamic resources")
			os.Exit(1)
		}
	}

	// From here on as the upstream command wires it: NodeOverlays decorate the provider, and the
	// undecorated one is handed to the controllers beside it.
	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	cloudProvider := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	repairPolicies := lo.Must(health.NewRepairPolicyMatcher(ctx, cloudProvider))
	cluster := state.NewCluster(op.Clock, op.GetClient(), cloudProvider, state.WithRepairPolicyMatcher(repairPolicies))
	op.WithControllers(ctx, controllers.NewControllers(
		ctx,
		op.Manager,
		op.Clock,
		op.GetClient(),
		op.EventRecorder,
		cloudProvider,
		undecorated,
		cluster,
		op.InstanceTypeStore,
		op.PredictionStore,
	)...).Start(ctx)
}
