package dbgen

// Stream numbers and constants of dbgen's dss.h, per table.
const (
	pMfgSd, pBrndSd, pTypeSd, pSizeSd, pCntrSd = 0, 1, 2, 3, 4
	pCmntSd, psQtySd, psScstSd, psCmntSd       = 6, 7, 8, 9
	pNameSd                                    = 37
	pCmntLen, psCmntLen                        = 14, 124
	suppPerPart                                = 4

	sAddrSd, sNtrgSd, sPhneSd, sAbalSd, sCmntSd = 32, 33, 34, 35, 36
	bbbJnkSd, bbbTypeSd, bbbCmntSd, bbbOffsetSd = 44, 45, 46, 47
	sAddrLen, sCmntLen                          = 25, 63

	cAddrSd, cNtrgSd, cPhneSd, cAbalSd, cMsegSd, cCmntSd = 26, 27, 28, 29, 30, 31
	cAddrLen, cCmntLen                                   = 25, 73

	oSuppSd, oClrkSd, oCmntSd, oOdateSd, oPrioSd, oCkeySd, oLcntSd = 10, 11, 12, 13, 38, 40, 43
	oCmntLen, oClrkScl, oLcntMax, ordersPerCust                    = 49, 1000, 7, 10

	lQtySd, lDcntSd, lTaxSd, lShipSd, lSmodeSd, lPkeySd, lSkeySd = 14, 15, 16, 17, 18, 19, 20
	lSdteSd, lCdteSd, lRdteSd, lRflgSd, lCmntSd                  = 21, 22, 23, 24, 25
	lCmntLen                                                     = 27

	nCmntSd, rCmntSd, nCmntLen, rCmntLen = 41, 42, 72, 72

	startDate   = 92001 // dbgen's STARTDATE, yyddd
	currentDate = 95168 // dbgen's CURRENTDATE, yyddd (1995-06-17)
	totDate     = 2557  // days from 1992-01-01 to 1998-12-31, inclusive
	// epochDay19920101 is 1992-01-01 as days since 1970-01-01.
	epochDay19920101 = 8035
)
