import { ServerError, Status, type CompatServiceDefinition, type ServiceImplementation } from 'nice-grpc';

/**
 * A service implementation for the platform's gRPC tests: the methods given, and every other method of the definition
 * (definitions grow) failing UNIMPLEMENTED.
 */
export function serviceWith<D extends CompatServiceDefinition>(definition: D, methods: Partial<ServiceImplementation<D>>): ServiceImplementation<D> {
  const unimplemented = async () => {
    throw new ServerError(Status.UNIMPLEMENTED, 'not used');
  };
  const all = Object.fromEntries(Object.keys(definition.methods as object).map((method) => [method, unimplemented]));
  return { ...all, ...methods } as ServiceImplementation<D>;
}
