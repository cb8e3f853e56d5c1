package experiments

// Specs name policies; every registered one must resolve, including those
// of package policies (they register from its init).
import _ "gostachio/scheduler/policies"
