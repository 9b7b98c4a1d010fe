interface Window { carlab: any; carlabLab: any }
