/** The annotation KWOK manages nodes by; the fleet serves such nodes and the local cluster makes them. */
export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';
