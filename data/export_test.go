package data

// CIFARRecord is the size of one CIFAR-10 binary record, for the tests outside the package.
const CIFARRecord = cifarRecord
