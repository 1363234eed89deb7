package main

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// list reads the objects of a kind (apiVersion, kind) as T. The in-memory store keeps each
// object in the form it was written in: typed from here, unstructured through the API server
// (Cluster API's managers, kubectl), and its typed lists take only the former.
func list[T any](ctx context.Context, c inmemoryruntime.Client, apiVersion, kind string, options ...client.ListOption) ([]T, error) {
	objects := &unstructured.UnstructuredList{}
	objects.SetAPIVersion(apiVersion)
	objects.SetKind(kind + "List")
	if err := c.List(ctx, objects, options...); err != nil {
		return nil, err
	}
	items := make([]T, 0, len(objects.Items))
	for _, object := range objects.Items {
		var item T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &item); err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return items, nil
}
