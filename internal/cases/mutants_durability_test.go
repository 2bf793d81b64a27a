package cases

// durabilityMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the durability group must catch.
var durabilityMutants = []mutant{}
