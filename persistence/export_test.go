package persistence

// HookLockKey is the subscription set's advisory lock, for tests that hold it to make a
// change of the set wait.
const HookLockKey = hookLockKey
